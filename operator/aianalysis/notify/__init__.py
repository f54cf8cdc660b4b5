"""Notifications through the team's own Alertmanager: what needs a person, derived from the
cluster's objects by the leader at every pass (``notifier``), posted to Alertmanager's v2 API
(``alertmanager``); what should fire is pure (``desired``)."""

from __future__ import annotations

from aianalysis.notify.desired import ALERTNAMES, Notification, NotifyOptions, derive
from aianalysis.notify.notifier import Notifier, Pass

__all__ = ["ALERTNAMES", "Notification", "Notifier", "NotifyOptions", "Pass", "derive"]
