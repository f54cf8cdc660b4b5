"""What the LLM's investigation tools may read, how much of it they return, and the Prometheus they
query."""

from __future__ import annotations

import re
from typing import Annotated

import pydantic

from aianalysis.settings import _fields

_LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")

DEFAULT_CUSTOM_GROUPS: tuple[str, ...] = (
    "cert-manager.io",  # Certificate, Issuer, ClusterIssuer, CertificateRequest
    "acme.cert-manager.io",  # Order, Challenge
    "argoproj.io",  # Argo CD Application, AppProject; Argo Rollouts
    "*.toolkit.fluxcd.io",  # Flux Kustomization, HelmRelease, GitRepository...
    "networking.istio.io",  # VirtualService, DestinationRule, Gateway...
    "security.istio.io",  # PeerAuthentication, AuthorizationPolicy
    "route.openshift.io",  # Route
    "build.openshift.io",  # BuildConfig, Build
    "apps.openshift.io",  # DeploymentConfig
    "operators.coreos.com",  # OLM Subscription, ClusterServiceVersion, InstallPlan
)


class InvestigationSettings(_fields.Group):
    """What the investigation tools may read and how much of it they hand the LLM."""

    namespaces: Annotated[_fields.Names, _fields.Env("AIANALYSIS_INVESTIGATION_NAMESPACES")] = ()
    """Namespaces the investigation tools may read besides the incident's (comma-separated; ``*`` =
    all). Cluster-scoped kinds (Nodes, PersistentVolumes) are always readable."""

    custom_groups: Annotated[_fields.Names, _fields.Env("AIANALYSIS_INVESTIGATION_CUSTOM_GROUPS")] = (
        DEFAULT_CUSTOM_GROUPS
    )
    """API groups whose custom kinds the tools may read when the cluster serves them (comma-separated,
    ``*.toolkit.fluxcd.io`` style wildcards). Kinds named like secrets are never read."""

    tool_output_max_chars: _fields.Count = 8000
    """Cap on the text one investigation tool returns to the LLM."""

    tool_output_budget_tokens: _fields.Count = 20_000
    """Budget of one analysis for what the investigation tools return (characters / 4): each call
    is capped to what is left, and once it is spent they answer "budget spent" (the catalog tools
    stay available). Every returned token is re-read on each later turn, so this bounds cost."""

    tool_audit_max_records: Annotated[
        _fields.Tries,
        pydantic.AfterValidator(_fields.Constraint("must be at most 100", lambda value: value <= 100)),
    ] = 40
    """Tool calls recorded in ``status.investigation.calls`` (later ones are only counted; at most 100)."""


class PrometheusSettings(_fields.Group):
    """The Prometheus-compatible HTTP API (Prometheus, Thanos Query, Cortex, Mimir) of the Prometheus
    tools and of the effectiveness assessment."""

    env_prefix = _fields.PREFIX + "PROMETHEUS_"

    url: Annotated[
        str | None,
        pydantic.AfterValidator(
            _fields.Constraint(
                "must start with http:// or https://", lambda url: url.startswith(("http://", "https://"))
            )
        ),
    ] = None
    """The API's base URL, e.g. ``https://prometheus-k8s.monitoring.svc:9091``, for the Prometheus
    tools and the effectiveness assessment (before/after metrics, the alert state). Unset: no
    Prometheus tools, those checks skipped; set but not answering: the assessment's verdict is
    ``unknown``."""

    token: Annotated[pydantic.SecretStr | None, pydantic.Field(repr=False)] = None
    """Bearer token for Prometheus (from a Secret). Never logged."""

    token_file: str | None = None
    """File holding the bearer token, re-read on every request (a projected ServiceAccount token)."""

    ca_file: str | None = None
    """CA bundle that signs Prometheus' serving certificate (default: the system's)."""

    tenant: str | None = None
    """``X-Scope-OrgID`` header value for multi-tenant backends (Thanos, Cortex, Mimir)."""

    label_proxy_param: Annotated[
        str | None,
        pydantic.AfterValidator(
            _fields.Constraint("must be a label name", lambda name: _LABEL_NAME.fullmatch(name) is not None)
        ),
    ] = None
    """When ``url`` is a prom-label-proxy (``-label=namespace``), the name of the label it enforces
    (``namespace``): every request of the Prometheus tools then carries it once per namespace the
    analysis may read, and the proxy enforces that scope too (series without a namespace label are
    then out of reach, also for cluster-scoped incidents). Unset: the tools' own scoping alone."""

    timeout_seconds: _fields.Seconds = 10.0
    """Per-request timeout of a Prometheus call; a slower query is reported to the LLM as such."""

    max_series: _fields.Count = 20
    """Series a query result shows (the highest last values); the rest are counted, not shown."""

    max_response_bytes: _fields.Count = 4_000_000
    """Largest Prometheus answer read; a larger one is refused with advice to narrow the query."""
