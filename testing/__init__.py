"""Helpers shared by the tests: real git projects, the real CLI in subprocesses, recorded
GitHub data and a local fake GitHub server that answers the way GitHub does."""
