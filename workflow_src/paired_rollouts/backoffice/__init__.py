"""backoffice sub-package."""
