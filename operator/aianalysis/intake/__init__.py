"""The front door for alerts: an Alertmanager webhook receiver that turns alerts into AIAnalysis
objects, one per incident (deduplicated, with a cooldown), inside the operator process.

- ``payload``: Alertmanager's webhook payload (version 4).
- ``mapping``: pure alert → AIAnalysis facts, configurable.
- ``resolve``: reads the owning workload and the namespace's business context.
- ``dedup``: one analysis per incident; repeats count, resolved alerts cancel what has not started.
- ``server``: the aiohttp endpoint, authentication, limits and the bounded work queue.
"""

from aianalysis.intake import dedup, mapping, payload, resolve, server
from aianalysis.intake.server import Intake

__all__ = ["Intake", "dedup", "mapping", "payload", "resolve", "server"]
