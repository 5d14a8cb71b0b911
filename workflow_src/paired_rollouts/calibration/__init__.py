"""The zero-shot calibration register (amendment A2): the base model checked against its registered bands."""
