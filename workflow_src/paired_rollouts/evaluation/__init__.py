"""evaluation sub-package."""
