"""Status conditions, the standard shape (``type``, ``status``, ``reason``, ``message``,
``lastTransitionTime``, ``observedGeneration``), built and merged one way by every writer."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Literal

from aianalysis.resources import clock
from aianalysis.resources.base import Model

ConditionStatus = Literal["True", "False", "Unknown"]
READY = "Ready"
"""An AIAnalysis' one condition: ``True`` once it ended with a result a person can act on."""
MAX_MESSAGE = 1024


class Condition(Model):
    type: str
    status: ConditionStatus
    reason: str
    message: str = ""
    last_transition_time: str
    observed_generation: int | None = None


def condition(
    type: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    *,
    now: datetime.datetime,
    generation: int | None,
) -> Condition:
    """A condition as every writer writes it: the message cut to :data:`MAX_MESSAGE` characters,
    the transition at ``now`` (:func:`merged` keeps an earlier one when the status did not move)."""
    return Condition(
        type=type,
        status=status,
        reason=reason,
        message=message[:MAX_MESSAGE],
        last_transition_time=clock.timestamp(now),
        observed_generation=generation,
    )


def set_condition(conditions: Sequence[Condition] | None, new: Condition) -> list[Condition]:
    """``new`` in place of the condition of its type (appended when there is none); the others,
    another writer's too, are kept. An unchanged status keeps its ``lastTransitionTime``."""
    out, replaced = [], False
    for old in conditions or []:
        if old.type != new.type:
            out.append(old)
            continue
        replaced = True
        same = old.status == new.status
        out.append(new.model_copy(update={"last_transition_time": old.last_transition_time}) if same else new)
    return out if replaced else [*out, new]
