"""The operator's own exception tree. Classified once, where the fault happens; only
``handlers`` turns them into kopf's Temporary/Permanent errors."""

from __future__ import annotations


class AIAnalysisError(Exception):
    """Base of every error this package raises on purpose."""

    retryable: bool = False
    reason: str = "Error"


class ConfigError(AIAnalysisError):
    """Settings or command-line input that cannot work; fix the configuration."""

    reason = "InvalidConfiguration"


class InvalidSpecError(AIAnalysisError):
    """An AIAnalysis/WorkflowExecution whose spec cannot be analysed (the CRD let it through)."""

    reason = "InvalidSpec"


class CatalogError(AIAnalysisError):
    """A RemediationWorkflow file or object that does not parse."""

    reason = "InvalidCatalog"


class ProviderError(AIAnalysisError):
    """The LLM provider failed for good (bad request, auth, model not found)."""

    reason = "ProviderError"


class ProviderUnavailableError(ProviderError):
    """The LLM provider failed in a way that may pass (429/529/5xx, timeout, connection)."""

    retryable = True
    reason = "ProviderUnavailable"


class ClusterError(AIAnalysisError):
    """A Kubernetes API call failed in a way that may pass."""

    retryable = True
    reason = "ClusterUnavailable"
