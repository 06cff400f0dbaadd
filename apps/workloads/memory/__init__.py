"""Memory-fit estimator: the bytes a model needs on each GPU to serve or train it, term by term with formulas.

Pure Python (no Django, no ORM) so it can be tested and reused on its own. Import each name from the sub-module that
owns it: `errors` (ShapeError), `precisions` (number formats), `shapes` (ModelShape, parameter count), `breakdown`
(Term, Breakdown), `inference`, `training`, `capacity` (capacity and fit), `search` (inverse answers),
`training_search` (largest micro-batch, smallest change that makes a training plan fit), `hf_config`.

Symbols follow DESIGN.md: P parameters, L layers, h hidden size, a attention heads, n_kv KV heads, d head dim, f FFN
size, V vocabulary, s sequence length, b micro-batch, c context tokens, t tensor-parallel degree, p pipeline stages,
N data-parallel GPUs.
Sizes are bytes unless a name says otherwise (`_gib` = 2**30 bytes, `_mib` = 2**20 bytes, `_gb` = 10**9 bytes).
"""
