"""Published versus reproduced: the paper's numbers as data, and their comparison with a results root."""
