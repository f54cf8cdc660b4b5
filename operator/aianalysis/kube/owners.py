"""The one owner-chain walk: from an object up through its ``ownerReferences`` (the controlling
owner first), Pod → ReplicaSet → Deployment, Pod → Job → CronJob. How an object is read is the
caller's (the intake's cached reads, the investigation reader); the walk only decides where to go
next and when to stop."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any


@dataclasses.dataclass(frozen=True, kw_only=True)
class Owner:
    """An object named by kind and name (owners share the namespace of what they own)."""

    kind: str
    name: str
    namespace: str | None
    api_version: str | None = None


Read = Callable[[Owner], Awaitable[Mapping[str, Any] | None]]
"""The object as read, or None when it cannot be (unknown kind, not found, not allowed)."""


def owners_of(obj: Mapping[str, Any], *, controller_only: bool = False) -> list[Owner]:
    """The owners of ``obj``, the controlling one first (only it with ``controller_only``)."""
    meta = obj.get("metadata") or {}
    refs = sorted(meta.get("ownerReferences") or (), key=lambda ref: not ref.get("controller"))
    return [
        Owner(
            kind=str(ref["kind"]),
            name=str(ref["name"]),
            namespace=meta.get("namespace"),
            api_version=ref.get("apiVersion"),
        )
        for ref in refs
        if ref.get("kind") and ref.get("name") and (ref.get("controller") or not controller_only)
    ]


async def walk(
    start: Owner, *, read: Read, max_depth: int, controller_only: bool = False
) -> list[tuple[Owner, Mapping[str, Any] | None]]:
    """``start`` and the owners above it, each with the object as read — at most ``max_depth`` of
    them. The walk ends at an object without an owner, or at one that cannot be read (listed with
    None: it is known by its reference only)."""
    chain: list[tuple[Owner, Mapping[str, Any] | None]] = []
    current: Owner | None = start
    while current is not None and len(chain) < max_depth:
        obj = await read(current)
        chain.append((current, obj))
        if obj is None:
            break
        owners = owners_of(obj, controller_only=controller_only)
        current = owners[0] if owners else None
    return chain
