"""verifier: see the layout in README (Development)."""
