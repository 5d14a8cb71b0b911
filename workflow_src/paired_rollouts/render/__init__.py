"""render sub-package."""
