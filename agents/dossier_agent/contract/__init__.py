"""The pure part of the agent package, shared with the Dossier server: load-test metrics, load and job spec parsing,
verdict math and operation names.

The server imports nothing else from `dossier_agent`. Modules here import the standard library, numpy and each other
only: no subprocess, threads, sockets, NVML or torch, so importing them costs the web process nothing.
"""
