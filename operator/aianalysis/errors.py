"""The operator's own exception tree. Classified once, where the fault happens; only
the processes' ``handlers`` turn them into kopf's Temporary/Permanent errors."""

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
    billed: bool = True
    """Whether the conversation it ended had a billed response; the pipeline clears it when not, so
    a retry does not count as another paid conversation."""


class ProviderUnavailableError(ProviderError):
    """The LLM provider failed in a way that may pass (429/529/5xx, timeout, connection)."""

    retryable = True
    reason = "ProviderUnavailable"


class ClusterError(AIAnalysisError):
    """A Kubernetes API call failed in a way that may pass (``kube.calls`` classifies)."""

    retryable = True
    reason = "ClusterUnavailable"

    def __init__(self, message: str, *, status: int | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail
        """The API server's own words (its ``Status`` message), when it answered."""


class ClusterRejectedError(AIAnalysisError):
    """The API server refused a request for good (a 4xx other than 401/408/409/429): retrying
    cannot help."""

    reason = "ClusterRejected"

    def __init__(self, message: str, *, status: int, detail: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail
        """The API server's own words (its ``Status`` message)."""
        self.reason = _REJECTION_REASONS.get(status, "ClusterRejected")


_REJECTION_REASONS = {400: "BadRequest", 403: "Forbidden", 404: "NotFound", 422: "StatusRejected"}


class AnalysisDeadlineError(ProviderError):
    """One analysis (its whole conversation, retries and waits included) ran past its wall-clock
    deadline. Not retried: another conversation would be another bill for the same slow path."""

    reason = "AnalysisDeadlineExceeded"


class ProviderAuthError(ProviderError):
    """The LLM provider refused the credentials (401) or the permission (403)."""

    reason = "ProviderAuthFailed"


class ProviderBadRequestError(ProviderError):
    """The LLM provider refused the request itself (400, 404 model, 413, 422)."""

    reason = "ProviderBadRequest"


class ProviderResponseError(ProviderError):
    """The LLM provider answered with something that is not a valid response (a non-JSON body, say
    from a proxy in between). Retried like unavailability, under its own reason."""

    retryable = True
    reason = "ProviderBadResponse"
