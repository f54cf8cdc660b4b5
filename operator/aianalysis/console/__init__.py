"""``aianalysis console``: a local web page to review analyses and approve or reject them, as you.

It runs on the person's machine with their own kubeconfig (as Headlamp's desktop mode or k9s do): the
cluster sees that person and no new identity; RBAC and the approval policies apply to them as to
``kubectl``. Approve and Reject go through the CLI's code (``executor.submit``), bound to the analysis
uid and selection digest the page showed.

``server`` is the web side (sessions, CSRF, headers, routes); ``views`` reads the cluster and shapes
what a page shows; ``templates/`` are jinja2 templates with autoescaping (every value from the
cluster, the LLM or a person is HTML-escaped).
"""

from __future__ import annotations

from aianalysis.console.server import run_console

__all__ = ["run_console"]
