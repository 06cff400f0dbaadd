"""A tiny Django app with team-owned models, installed only by the tests that need one (scoping, audit history).

The project's own team-owned models belong to apps that must not be a dependency of the accounts and audit tests.
"""
