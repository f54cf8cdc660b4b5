"""What a process says when an object reaches a terminal transition: a Kubernetes Event for kubectl
users (through :mod:`aianalysis.kube.events`, the one way to post Events) and a log line for log
pipelines. Reconcilers return a :class:`Transition`; the handlers announce it."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from aianalysis import kube, resources
from aianalysis.kube import events

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Transition:
    """A transition to announce as a Kubernetes Event."""

    type: str  # Normal | Warning
    reason: str
    message: str
    about: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """The object's body as read (the Event's involved object), when the reconciler knows it."""


async def announce(
    api: kube.ApiClient, transition: Transition, *, about: Mapping[str, Any] | None = None
) -> None:
    """Post ``transition`` as an Event on ``about`` (else on ``transition.about``) and log it."""
    body = about if about is not None else transition.about
    await asyncio.to_thread(
        events.post,
        api,
        about=body,
        type=transition.type,
        reason=transition.reason,
        message=transition.message,
        now=resources.utcnow(),
    )
    meta = body.get("metadata") or {}
    level = logging.INFO if transition.type == "Normal" else logging.WARNING
    log.log(
        level, "%s/%s: %s: %s", meta.get("namespace"), meta.get("name"), transition.reason, transition.message
    )
