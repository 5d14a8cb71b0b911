"""prereg sub-package."""
