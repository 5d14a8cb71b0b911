"""agents sub-package."""
