"""The model check at startup (``aianalysis run``, ``aianalysis eval``).

Peers broke on retired default model ids: every analysis then failed, one paid retry loop at a
time. Each provider verifies its model once with the cheapest call its platform offers (a free
model lookup where there is one) and hands the outcome to :func:`judge_failure`:

- the platform said no (unknown or retired model, 4xx) → ``errors.ConfigError``: the command stops
  with one line naming the setting to change;
- the check could not tell (timeout, connection, 429, 5xx) → a warning; startup goes on, because a
  passing outage must not keep the operator down.
"""

from __future__ import annotations

from aianalysis import errors, settings

_REFUSED = frozenset({401, 403})


def judge_failure(provider: str, model: str, *, status: int | None, failure: errors.ProviderError) -> str:
    """The warning to print when ``failure`` is transient; raises ``ConfigError`` otherwise."""
    detail = " ".join(str(failure).split())  # one line, whatever the platform's message looks like
    setting = settings.LlmSettings.env_name("model")
    if failure.retryable:
        return f"could not verify model {model!r} with provider {provider!r} ({detail}); starting anyway"
    if status in _REFUSED:
        raise errors.ConfigError(
            f"provider {provider!r} refused access to model {model!r} ({detail}); check its credentials "
            f"and that the model is enabled for them, or set {setting}"
        )
    raise errors.ConfigError(
        f"model {model!r} is unknown or retired at provider {provider!r} ({detail}); "
        f"set {setting} to a model id it serves"
    )
