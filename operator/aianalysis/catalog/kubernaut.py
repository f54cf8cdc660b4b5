"""Kubernaut-format RemediationWorkflows (``kubernaut.ai/v1alpha1``) as ours (``kubernaut.io/v1alpha1``).

Lossless wherever our model has a place for a field; everything else is listed in
``Conversion.dropped`` with the reason, so ``aianalysis catalog import`` can report it per file.

==========================================  ===============================================
Kubernaut                                   ours
==========================================  ===============================================
metadata.name                               metadata.name and spec.workflowId
metadata.labels / annotations               carried
spec.version / actionType                   spec.version (``v1.2.0`` → ``1.2.0``, ``1.2`` →
                                            ``1.2.0``) / actionType
spec.description.what                       spec.description; spec.title = its first sentence
spec.description.whenToUse / whenNotToUse   spec.guidance.whenToUse / whenNotToUse /
/ preconditions                             preconditions
spec.labels.severity / component /          spec.labels.severity (warning, info kept as
environment                                 synonyms) / component / environment; ``*`` = any
spec.labels.priority (one string)           spec.labels.priority (a list); ``*`` = any
spec.customLabels                           spec.customLabels
spec.detectedLabels                         spec.detectedLabels (``false`` = no requirement
                                            in Kubernaut, so dropped)
spec.execution.engine / bundle /            spec.execution.engine / bundle / bundleDigest /
bundleDigest / serviceAccountName /         serviceAccountName / engineConfig; containerImage
engineConfig                                = bundle (pinned @bundleDigest when given); no
                                            bundle = no containerImage: imported, refused
                                            by admission as ``NotExecutable``; no
                                            bundleDigest = a tag: imported, refused as
                                            ``ImageNotPinned`` until pinned; a URL
                                            bundle (ansible's git repository) = no
                                            containerImage
spec.parameters                             spec.parameters (type float → number; typed
                                            defaults kept typed)
(no risk level in Kubernaut)                spec.riskLevel = annotation
                                            ``aianalysis.kubernaut.io/risk-level``, else the
                                            importer's ``risk_level`` (default low, below)
==========================================  ===============================================

Default risk level: ``low``. Kubernaut has no risk level at selection time: any workflow whose
labels fit the incident is offered, and risk is decided when a person (or its approval policy)
approves the execution. Importing at ``low`` keeps an imported catalog selectable exactly where
Kubernaut would select it, under this operator's default tolerance (``low``); execution still
needs an approval recorded by the API server (or the auto-execution policy). A ``high`` default
would refuse every imported workflow to every incident without a ``high`` tolerance, with nothing
saying so at analysis time. To gate by risk, annotate workflows or pass ``--risk-level``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from aianalysis import errors, resources

API_VERSION = "kubernaut.ai/v1alpha1"
KIND = "RemediationWorkflow"
RISK_ANNOTATION = "aianalysis.kubernaut.io/risk-level"
DEFAULT_RISK_LEVEL = "low"
_WILDCARD = "*"
_PARAMETER_FIELDS = (
    "name",
    "type",
    "required",
    "description",
    "enum",
    "pattern",
    "minimum",
    "maximum",
    "default",
)
_DETECTED = {
    "helmManaged": bool,
    "gitOpsManaged": bool,
    "gitOpsTool": str,
    "pdbProtected": bool,
    "hpaEnabled": bool,
    "stateful": bool,
    "networkIsolated": bool,
    "serviceMesh": str,
}
_SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")
_TITLE_CHARS = 100
_SENTENCE = re.compile(r"(?<=[.!?])\s")
_LOOSE_VERSION = re.compile(r"^[vV]?(0|[1-9]\d*)\.(0|[1-9]\d*)(\.(0|[1-9]\d*))?([-+].*)?$")


@dataclasses.dataclass(frozen=True)
class Conversion:
    obj: dict[str, Any]
    """Our RemediationWorkflow object, ready for ``kubectl apply`` (not yet admitted)."""
    dropped: list[str]
    """``field: why`` for each Kubernaut field our model has no place for."""
    notes: list[str]
    """Values the conversion had to choose (title, riskLevel)."""


def is_kubernaut(document: Mapping[str, Any]) -> bool:
    return document.get("apiVersion") == API_VERSION and document.get("kind") == KIND


def is_bare_spec(document: Mapping[str, Any]) -> bool:
    """A Kubernaut workflow schema without its object envelope (``version``, ``description.what``
    and ``execution`` at the top level, no ``kind``)."""
    return (
        "kind" not in document
        and "apiVersion" not in document
        and isinstance(document.get("execution"), Mapping)
        and isinstance(_mapping(document.get("description")).get("what"), str)
        and document.get("version") is not None
    )


def wrap(spec: Mapping[str, Any], *, name: str) -> dict[str, Any]:
    """A bare workflow schema as the Kubernaut object it describes."""
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "spec": dict(spec)}


def convert(document: Mapping[str, Any], *, where: str, risk_level: str = DEFAULT_RISK_LEVEL) -> Conversion:
    """One Kubernaut RemediationWorkflow as ours; ``errors.CatalogError`` names ``where`` when the
    object cannot be converted (no name, no what/whenToUse, no execution bundle...)."""
    if risk_level not in resources.RISK_ORDER:
        raise errors.CatalogError(
            f"risk level must be one of {', '.join(resources.RISK_ORDER)}, got {risk_level!r}"
        )
    return _Converter(where).run(document, risk_level=risk_level)


class _Converter:
    def __init__(self, where: str) -> None:
        self.where = where
        self.dropped: list[str] = []
        self.notes: list[str] = []

    def fail(self, message: str) -> errors.CatalogError:
        return errors.CatalogError(f"{self.where}: {message}")

    def drop(self, field: str, why: str) -> None:
        self.dropped.append(f"{field}: {why}")

    def run(self, document: Mapping[str, Any], *, risk_level: str) -> Conversion:
        metadata = _mapping(document.get("metadata"))
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail(f"{KIND} without metadata.name")
        self.where = f"{self.where} ({KIND} {name!r})"
        spec = _mapping(document.get("spec"))
        if not spec:
            raise self.fail("spec must be a mapping")
        risk = self._risk(metadata, risk_level)
        ours: dict[str, Any] = {
            "workflowId": name,
            "version": self._version(spec.get("version")),
            **self._description(spec.get("description")),
            "labels": self._labels(_mapping(spec.get("labels"))),
            "riskLevel": risk,
            "execution": self._execution(_mapping(spec.get("execution"))),
        }
        if spec.get("actionType") is not None:
            ours["actionType"] = spec["actionType"]
        if spec.get("parameters"):
            ours["parameters"] = [self._parameter(n, p) for n, p in enumerate(spec["parameters"])]
        if spec.get("customLabels"):
            ours["customLabels"] = self._custom_labels(_mapping(spec.get("customLabels")))
        detected = self._detected(spec.get("detectedLabels"))
        if detected:
            ours["detectedLabels"] = detected
        for field in sorted(set(spec) - {"version", "description", "labels", "execution", "actionType",
                                          "parameters", "customLabels", "detectedLabels"}):  # fmt: skip
            self.drop(f"spec.{field}", _WHY.get(field, "no such field in our RemediationWorkflow"))
        self._metadata_drops(metadata, document)
        obj = {
            "apiVersion": resources.API_VERSION,
            "kind": KIND,
            "metadata": self._metadata(metadata),
            "spec": ours,
        }
        return Conversion(obj=obj, dropped=self.dropped, notes=self.notes)

    # ---- parts ---------------------------------------------------------------------------------

    def _risk(self, metadata: Mapping[str, Any], fallback: str) -> str:
        annotated = _mapping(metadata.get("annotations")).get(RISK_ANNOTATION)
        if annotated is None:
            self.notes.append(f"riskLevel: not in the Kubernaut format; set to {fallback}")
            return fallback
        if annotated not in resources.RISK_ORDER:
            raise self.fail(f"annotation {RISK_ANNOTATION} must be low, medium or high, got {annotated!r}")
        return str(annotated)

    def _version(self, raw: object) -> object:
        """``v1.2.0`` and ``1.2`` as semver; anything else is left for admission to refuse."""
        text = str(raw).strip() if isinstance(raw, str | int | float) else None
        found = _LOOSE_VERSION.match(text) if text else None
        if text is None or found is None:
            return raw
        major, minor, patch, rest = found.group(1, 2, 4, 5)
        version = f"{major}.{minor}.{patch or '0'}{rest or ''}"
        if version != text:
            self.notes.append(f"version: {text!r} normalized to {version!r}")
        return version

    def _description(self, raw: object) -> dict[str, Any]:
        description = _mapping(raw)
        what = description.get("what")
        if not isinstance(what, str) or not what.strip():
            raise self.fail("spec.description.what is required (a workflow needs a description)")
        guidance = {
            key: description[key]
            for key in ("whenToUse", "whenNotToUse", "preconditions")
            if isinstance(description.get(key), str) and description[key].strip()
        }
        for key in sorted(set(description) - {"what", "whenToUse", "whenNotToUse", "preconditions"}):
            self.drop(f"spec.description.{key}", "no such part in our structured guidance")
        title = _title(what)
        self.notes.append(f"title: first sentence of description.what ({title!r})")
        found: dict[str, Any] = {"title": title, "description": what.strip()}
        if guidance:
            found["guidance"] = guidance
        return found

    def _labels(self, labels: Mapping[str, Any]) -> dict[str, Any]:
        ours: dict[str, Any] = {}
        for field in ("severity", "environment"):
            values = _strings(labels.get(field))
            if values and _WILDCARD not in values:
                ours[field] = [value.lower() for value in values] if field == "severity" else values
        component = _strings(labels.get("component"))
        if component:
            ours["component"] = component
        priority = labels.get("priority")
        if isinstance(priority, str) and priority.strip() and priority.strip() != _WILDCARD:
            ours["priority"] = [priority.strip()]
        if labels.get("signalTypes"):
            ours["signalTypes"] = _strings(labels["signalTypes"])
        for field in sorted(
            set(labels) - {"severity", "environment", "component", "priority", "signalTypes"}
        ):
            why = "no cluster classification in this operator" if field == "cluster" else "no such label here"
            self.drop(f"spec.labels.{field}", why)
        return ours

    def _execution(self, execution: Mapping[str, Any]) -> dict[str, Any]:
        bundle = execution.get("bundle")
        ours: dict[str, Any] = {}
        if isinstance(bundle, str) and "://" in bundle:  # an image reference never has a scheme
            ours["bundle"] = bundle
            self.notes.append(
                f"execution: engine {execution.get('engine') or 'job'} bundle {bundle} is a repository, "
                "not an image: imported but not executable (admission: NotExecutable) until "
                "execution.containerImage is set"
            )
        elif isinstance(bundle, str) and bundle.strip():
            digest = execution.get("bundleDigest")
            ours["containerImage"] = bundle if not digest or "@" in bundle else f"{bundle}@{digest}"
            ours["bundle"] = bundle
            if not digest and "@" not in bundle:
                self.notes.append(
                    f"execution: bundle {bundle} has no digest (bundleDigest): imported but not offered "
                    "(admission: ImageNotPinned) until execution.containerImage is pinned as "
                    "name@sha256:<digest>"
                )
        else:
            engine = execution.get("engine") or "job"
            self.notes.append(
                f"execution: engine {engine} without a bundle: imported but not executable "
                "(admission: NotExecutable) until execution.containerImage is set"
            )
        for field in ("engine", "bundleDigest", "serviceAccountName", "engineConfig"):
            if execution.get(field) is not None:
                ours[field] = execution[field]
        for field in sorted(
            set(execution) - {"bundle", "engine", "bundleDigest", "serviceAccountName", "engineConfig"}
        ):
            self.drop(
                f"spec.execution.{field}", _WHY.get(f"execution.{field}", "no such execution setting here")
            )
        return ours

    def _parameter(self, number: int, raw: object) -> dict[str, Any]:
        param = _mapping(raw)
        ours = {field: param[field] for field in _PARAMETER_FIELDS if param.get(field) is not None}
        if param.get("dependsOn"):
            ours["dependsOn"] = param["dependsOn"]
        if ours.get("type") == "float":
            ours["type"] = "number"
        for field in sorted(set(param) - {*_PARAMETER_FIELDS, "dependsOn"}):
            self.drop(f"spec.parameters[{number}].{field}", "no such parameter setting here")
        return ours

    def _custom_labels(self, labels: Mapping[str, Any]) -> dict[str, str]:
        ours: dict[str, str] = {}
        for key, value in sorted(labels.items()):
            values = value if isinstance(value, list) else [value]
            if len(values) == 1 and isinstance(values[0], str):
                ours[str(key)] = values[0]
            else:
                self.drop(f"spec.customLabels.{key}", "only one string value per label can be matched here")
        return ours

    def _detected(self, raw: object) -> dict[str, Any]:
        ours: dict[str, Any] = {}
        for key, value in sorted(_mapping(raw).items()):
            kind = _DETECTED.get(key)
            if kind is None:
                self.drop(f"spec.detectedLabels.{key}", "this operator does not detect it")
                continue
            if kind is bool:
                flag = value if isinstance(value, bool) else str(value).strip().lower() == "true"
                if flag:
                    ours[key] = True
                else:
                    self.drop(f"spec.detectedLabels.{key}", "false means no requirement in Kubernaut")
            elif isinstance(value, str) and value.strip():
                ours[key] = value.strip()
        return ours

    def _metadata(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        ours: dict[str, Any] = {"name": metadata["name"]}
        for field in ("labels", "annotations"):
            if metadata.get(field):
                ours[field] = dict(metadata[field])
        return ours

    def _metadata_drops(self, metadata: Mapping[str, Any], document: Mapping[str, Any]) -> None:
        if metadata.get("namespace"):
            self.drop("metadata.namespace", "our RemediationWorkflow is cluster-scoped")
        for field in sorted(set(metadata) - {"name", "namespace", "labels", "annotations"}):
            why = "set by the API server" if field in _SERVER_METADATA else "not carried"
            self.drop(f"metadata.{field}", why)
        if document.get("status") is not None:
            self.drop("status", "written by Kubernaut; this operator writes its own Accepted condition")


_WHY = {
    "rollbackParameters": "this operator does not run rollbacks of workflows",
    "dependencies": "this operator does not check a workflow's ConfigMap/Secret dependencies",
    "maintainers": "no maintainer field here",
    "execution.clusterId": "workflows run on the incident's cluster here",
    "execution.resources": "execution resources are the runner's to set here",
}


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [str(item) for item in value] if isinstance(value, list) else []


def _title(what: str) -> str:
    first = _SENTENCE.split(what.strip(), maxsplit=1)[0].strip().rstrip(".")
    return first if len(first) <= _TITLE_CHARS else first[: _TITLE_CHARS - 3].rstrip() + "..."
