"""contract: see the layout in README (Development)."""
