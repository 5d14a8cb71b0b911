"""probe sub-package."""
