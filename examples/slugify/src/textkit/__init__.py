"""A tiny text toolkit: the example project a coding agent is asked to fix."""
