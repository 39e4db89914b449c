"""The composition root: builds the application services from settings, and runs processes."""
