"""Benchmarks of the operator (``make bench`` = ``python -m bench``; ``--quick``, ``--only NAME``).

Every figure is a ratio or a distribution measured side by side in one invocation on one local
DevCluster; absolute times from different invocations are never compared (machines are noisy).

- ``overhead``: create → terminal status of N analyses with an instant scripted model (and with the
  offline provider), against a raw floor that does the same creates and status writes directly.
- ``concurrency``: efficiency of LLM-bound analyses (2 s per reply) under the concurrency cap.
- ``search``: catalog search latency at 100 / 1,000 / 10,000 workflows (``catalog_search``).
- ``memory``: operator RSS with 10,000 workflows and 1,000 analyses.
- ``caching``: share of the first Messages API request inside the prompt-cache prefix.

Results: a printed table, and JSON in ``bench/results/`` (with the operators' logs).
"""
