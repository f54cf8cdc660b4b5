"""The object kinds the investigation tools may read, and where they live in the API.

A fixed table (no discovery) keeps reads predictable and the tool description honest. Left out on
purpose:
- ``Secret``: never read, whatever the LLM asks (refused with "Secrets are never read").
- ``RemediationWorkflow``: the catalog is reachable only through the catalog tools, which apply the
  business-context policy; reading the objects directly would let the LLM see excluded workflows.
ConfigMaps are readable because misconfiguration is a common root cause; their secret-looking
values are redacted (see ``_redact``).
"""

from __future__ import annotations

import dataclasses
import re

from aianalysis import resources


@dataclasses.dataclass(frozen=True, kw_only=True)
class Kind:
    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool
    short: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection_path(self, namespace: str | None) -> str:
        """URL path of the collection (all namespaces when ``namespace`` is None)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            return f"{base}/namespaces/{namespace}/{self.plural}"
        return f"{base}/{self.plural}"

    def object_path(self, name: str, namespace: str | None) -> str:
        return f"{self.collection_path(namespace)}/{name}"


_K = Kind
_RBAC = "rbac.authorization.k8s.io"
_CERT = "cert-manager.io"
_OLM = "operators.coreos.com"
KINDS: tuple[Kind, ...] = (
    _K(kind="Pod", group="", version="v1", plural="pods", namespaced=True, short=("po",)),
    _K(
        kind="Deployment",
        group="apps",
        version="v1",
        plural="deployments",
        namespaced=True,
        short=("deploy",),
    ),
    _K(
        kind="StatefulSet", group="apps", version="v1", plural="statefulsets", namespaced=True, short=("sts",)
    ),
    _K(kind="DaemonSet", group="apps", version="v1", plural="daemonsets", namespaced=True, short=("ds",)),
    _K(kind="ReplicaSet", group="apps", version="v1", plural="replicasets", namespaced=True, short=("rs",)),
    _K(kind="Job", group="batch", version="v1", plural="jobs", namespaced=True),
    _K(kind="CronJob", group="batch", version="v1", plural="cronjobs", namespaced=True, short=("cj",)),
    _K(kind="Node", group="", version="v1", plural="nodes", namespaced=False, short=("no",)),
    _K(kind="Service", group="", version="v1", plural="services", namespaced=True, short=("svc",)),
    _K(
        kind="PersistentVolumeClaim",
        group="",
        version="v1",
        plural="persistentvolumeclaims",
        namespaced=True,
        short=("pvc",),
    ),
    _K(
        kind="PersistentVolume",
        group="",
        version="v1",
        plural="persistentvolumes",
        namespaced=False,
        short=("pv",),
    ),
    _K(kind="ConfigMap", group="", version="v1", plural="configmaps", namespaced=True, short=("cm",)),
    # Which node a PersistentVolume is attached to (a Multi-Attach error's other node).
    _K(
        kind="VolumeAttachment",
        group="storage.k8s.io",
        version="v1",
        plural="volumeattachments",
        namespaced=False,
    ),
    _K(
        kind="HorizontalPodAutoscaler",
        group="autoscaling",
        version="v2",
        plural="horizontalpodautoscalers",
        namespaced=True,
        short=("hpa",),
    ),
    _K(
        kind="Ingress",
        group="networking.k8s.io",
        version="v1",
        plural="ingresses",
        namespaced=True,
        short=("ing",),
    ),
    _K(kind="Namespace", group="", version="v1", plural="namespaces", namespaced=False, short=("ns",)),
    _K(kind="Event", group="", version="v1", plural="events", namespaced=True, short=("ev",)),
    _K(
        kind="ResourceQuota",
        group="",
        version="v1",
        plural="resourcequotas",
        namespaced=True,
        short=("quota",),
    ),
    _K(kind="LimitRange", group="", version="v1", plural="limitranges", namespaced=True, short=("limits",)),
    _K(
        kind="PodDisruptionBudget",
        group="policy",
        version="v1",
        plural="poddisruptionbudgets",
        namespaced=True,
        short=("pdb",),
    ),
    _K(
        kind="NetworkPolicy",
        group="networking.k8s.io",
        version="v1",
        plural="networkpolicies",
        namespaced=True,
        short=("netpol",),
    ),
    _K(
        kind="ServiceAccount",
        group="",
        version="v1",
        plural="serviceaccounts",
        namespaced=True,
        short=("sa",),
    ),
    _K(kind="Role", group=_RBAC, version="v1", plural="roles", namespaced=True),
    _K(kind="RoleBinding", group=_RBAC, version="v1", plural="rolebindings", namespaced=True),
    # Common operators' kinds (read through the custom-objects API; absent CRD = not found).
    _K(
        kind="Certificate", group=_CERT, version="v1", plural="certificates", namespaced=True, short=("cert",)
    ),
    _K(kind="Issuer", group=_CERT, version="v1", plural="issuers", namespaced=True),
    _K(kind="ClusterIssuer", group=_CERT, version="v1", plural="clusterissuers", namespaced=False),
    _K(kind="Route", group="route.openshift.io", version="v1", plural="routes", namespaced=True),
    _K(kind="BuildConfig", group="build.openshift.io", version="v1", plural="buildconfigs", namespaced=True),
    _K(kind="Subscription", group=_OLM, version="v1alpha1", plural="subscriptions", namespaced=True),
    _K(
        kind="ClusterServiceVersion",
        group=_OLM,
        version="v1alpha1",
        plural="clusterserviceversions",
        namespaced=True,
        short=("csv",),
    ),
    _K(
        kind="AuthorizationPolicy",
        group="security.istio.io",
        version="v1",
        plural="authorizationpolicies",
        namespaced=True,
    ),
    _K(
        kind="AIAnalysis",
        group=resources.GROUP,
        version=resources.VERSION,
        plural=resources.AIANALYSIS_PLURAL,
        namespaced=True,
        short=("aia",),
    ),
    _K(
        kind="WorkflowExecution",
        group=resources.GROUP,
        version=resources.VERSION,
        plural=resources.WORKFLOWEXECUTION_PLURAL,
        namespaced=True,
        short=("wfe",),
    ),
)

#: Kinds whose Pods ``list_pods_of_owner`` can find.
OWNER_KINDS: tuple[str, ...] = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob")

_SECRET_REFUSAL = "Secrets are never read: their values must not reach the LLM."  # noqa: S105 (a message)
_CATALOG_REFUSAL = (
    "RemediationWorkflows are read only through search_workflow_catalog and get_workflow_details, "
    "which apply the incident's business context."
)
#: Kinds refused by every investigation tool (any spelling), with the refusal text.
REFUSED: dict[str, str] = {
    **dict.fromkeys(("secret", "secrets"), _SECRET_REFUSAL),
    **dict.fromkeys(("remediationworkflow", "remediationworkflows", "rw"), _CATALOG_REFUSAL),
}

#: Canonical kind name -> Kind.
BY_KIND: dict[str, Kind] = {kind.kind: kind for kind in KINDS}

_BY_NAME: dict[str, Kind] = {
    alias.lower(): kind for kind in KINDS for alias in (kind.kind, kind.plural, *kind.short)
}


def lookup(text: str) -> Kind | None:
    """The kind named ``text`` (kind, plural or short name, any case; ``apps/v1 Deployment``,
    ``apps/v1/Deployment`` and ``deployment.apps`` forms too), or None."""
    return _BY_NAME.get(_bare(text))


def why_refused(text: str) -> str | None:
    """Why a kind is refused outright, or None."""
    return REFUSED.get(_bare(text))


def _bare(text: str) -> str:
    parts = re.split(r"[\s/]+", text.strip())
    return parts[-1].split(".")[0].lower() if parts else ""


def names() -> list[str]:
    return [kind.kind for kind in KINDS]
