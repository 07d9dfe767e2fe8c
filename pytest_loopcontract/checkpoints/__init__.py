"""checkpoints: see the layout in README (Development)."""
