"""What the LLM's investigation tools may read, how much of it they return, and the Prometheus they
query."""

from __future__ import annotations

from typing import Annotated

import pydantic

from aianalysis.settings import _fields as f

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


class Investigation(f.Group):
    """What the investigation tools may read and how much of it they hand the LLM."""

    namespaces: Annotated[f.Names, f.Env("AIANALYSIS_INVESTIGATION_NAMESPACES")] = ()
    """Namespaces the investigation tools may read besides the incident's (comma-separated; ``*`` =
    all). Cluster-scoped kinds (Nodes, PersistentVolumes) are always readable."""

    custom_groups: Annotated[f.Names, f.Env("AIANALYSIS_INVESTIGATION_CUSTOM_GROUPS")] = DEFAULT_CUSTOM_GROUPS
    """API groups whose custom kinds the tools may read when the cluster serves them (comma-separated,
    ``*.toolkit.fluxcd.io`` style wildcards). Kinds named like secrets are never read."""

    tool_output_max_chars: f.Count = 8000
    """Cap on the text one investigation tool returns to the LLM."""

    tool_output_budget_tokens: f.Count = 20_000
    """Budget of one analysis for what the investigation tools return (characters / 4): each call
    is capped to what is left, and once it is spent they answer "budget spent" (the catalog tools
    stay available). Every returned token is re-read on each later turn, so this bounds cost."""

    tool_audit_max_records: Annotated[
        f.Tries, pydantic.AfterValidator(f.Check("must be at most 100", lambda value: value <= 100))
    ] = 40
    """Tool calls recorded in ``status.investigation.calls`` (later ones are only counted; at most 100)."""


class Prometheus(f.Group):
    """The Prometheus-compatible HTTP API (Prometheus, Thanos Query, Cortex, Mimir) of the Prometheus
    tools and of the effectiveness assessment."""

    env_prefix = f.PREFIX + "PROMETHEUS_"

    url: Annotated[
        str | None,
        pydantic.AfterValidator(
            f.Check(
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

    timeout_seconds: f.Seconds = 10.0
    """Per-request timeout of a Prometheus call; a slower query is reported to the LLM as such."""

    max_series: f.Count = 20
    """Series a query result shows (the highest last values); the rest are counted, not shown."""

    max_response_bytes: f.Count = 4_000_000
    """Largest Prometheus answer read; a larger one is refused with advice to narrow the query."""
