"""loop: see the layout in README (Development)."""
