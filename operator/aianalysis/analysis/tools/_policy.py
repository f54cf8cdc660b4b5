"""What the investigation tools may read beyond the fixed kinds: which namespaces, which custom
resource groups. Both come from settings; neither is the LLM's choice.

- Namespaces: the incident's, plus ``investigation_namespaces`` (``*`` = every namespace).
  Cluster-scoped kinds (Nodes, PersistentVolumes...) are always readable.
- Custom resources: kinds the API server serves (discovery) in an allowlisted API group
  (``investigation_custom_groups``; ``*.toolkit.fluxcd.io`` matches every Flux group), never a
  kind whose name says it holds secrets (``ExternalSecret``, ``SealedSecret``...).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re

from aianalysis import settings

SECRET_KIND = re.compile(r"secret|credential|token|password", re.IGNORECASE)


class Denied(Exception):
    """A read the policy does not allow; the message says what is allowed."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReadPolicy:
    incident_namespace: str | None
    namespaces: tuple[str, ...] = ()
    """Namespaces readable besides the incident's; ``("*",)`` = all."""
    custom_groups: tuple[str, ...] = settings.DEFAULT_CUSTOM_GROUPS

    @property
    def every_namespace(self) -> bool:
        return "*" in self.namespaces

    def allowed_namespaces(self) -> list[str]:
        """The namespaces one may search (without ``*``)."""
        found = [self.incident_namespace] if self.incident_namespace else []
        return [*found, *(n for n in self.namespaces if n != "*" and n not in found)]

    def check_namespace(self, namespace: str) -> None:
        if self.every_namespace or namespace in self.allowed_namespaces():
            return
        allowed = ", ".join(self.allowed_namespaces()) or "none"
        raise Denied(
            f"namespace {namespace!r} is outside what this analysis may read (allowed: {allowed}; "
            "the operator's investigation_namespaces setting widens it)"
        )

    def group_allowed(self, group: str) -> bool:
        return any(fnmatch.fnmatchcase(group, pattern) for pattern in self.custom_groups)
