"""cli: see the layout in README (Development)."""
