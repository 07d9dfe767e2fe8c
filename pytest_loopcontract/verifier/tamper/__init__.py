"""verifier.tamper: see the layout in README (Development)."""
