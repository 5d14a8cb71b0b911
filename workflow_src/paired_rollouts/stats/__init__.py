"""stats sub-package."""
