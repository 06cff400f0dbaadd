"""Dossier GPU agent: pulls benchmark jobs from a Dossier server, runs them on this node, uploads the results."""

__version__ = "0.1.0"
PROTOCOL_VERSION = 1
API_PREFIX = "/api/agent/v1"
