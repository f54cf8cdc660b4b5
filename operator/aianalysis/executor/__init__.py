"""The executor: runs the workflow an analysis selected, as a Kubernetes Job, and reports how it
ended with a Kubernetes reason code (``reasons``). A separate, opt-in process
(``aianalysis executor``); the analysing operator never imports it.

- ``reasons`` — pure: Job/Pod/Event/Node state → canonical reason code (the one table).
- ``plan`` — pure: re-validation, the Job manifest, status transitions.
- ``approval`` — pure: an analysis → its WorkflowExecution (``aianalysis approve``, ``autoExecute``).
- ``runner`` / ``submit`` — the Kubernetes I/O; ``handlers`` — the kopf entry.
"""
