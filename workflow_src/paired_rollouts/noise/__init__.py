"""noise sub-package."""
