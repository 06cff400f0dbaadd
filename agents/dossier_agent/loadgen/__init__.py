"""The load generator of the throughput jobs: OpenAI-compatible and generic HTTP clients, SSE parsing, prompts,
output checks, capacity search and the self-check. Its HTTP client is plain asyncio (no third-party package on the
load path). The load spec, its schedules and the metrics are the contract's (`dossier_agent.contract.load_spec`,
`load_schedule`, `metrics`): the server reads them too."""
