"""The load generator of the throughput jobs: schedules, OpenAI-compatible and generic HTTP clients, SSE parsing,
prompts, output checks, capacity search and the self-check. Its HTTP client is plain asyncio (no third-party
package on the load path); the metrics come from `dossier_agent.contract.metrics`."""
