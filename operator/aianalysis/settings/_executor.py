"""What may run, where and how often: the product-wide safety switches, the executor's Jobs, its
``autoExecute`` gates and the guards against repeated or too many executions."""

from __future__ import annotations

from typing import Annotated, Literal

import pydantic

from aianalysis.settings import _fields

Risk = Literal["low", "medium", "high"]


class SafetySettings(_fields.Group):
    """Switches for the whole product: set them on the operator and the executor alike (the chart
    does)."""

    dry_run: _fields.Flag = False
    """Dry run for the whole product: analyses and approvals proceed and WorkflowExecutions are
    created, but the executor creates no Job (``status.dryRun``) and the assessment says
    ``not_executed``."""

    cross_namespace: Annotated[
        _fields.Names,
        pydantic.AfterValidator(
            _fields.Constraint(
                "takes pairs like team-a=shared",
                lambda p: len(p.split("=")) == 2 and all(p.split("=")),
                each=True,
            )
        ),
    ] = ()
    """Allowed cross-namespace pairs ``analysis-namespace=target-namespace`` (comma-separated;
    ``ns=*``: any target namespace for analyses in ``ns``): an AIAnalysis may otherwise only concern
    its own namespace."""

    def cross_namespace_pairs(self) -> frozenset[tuple[str, str]]:
        """``cross_namespace`` as (analysis namespace, other namespace) pairs."""
        return frozenset((a.strip(), b.strip()) for a, b in (p.split("=", 1) for p in self.cross_namespace))


class ExecutorSettings(_fields.Group):
    """The workflow Jobs of the executor (``aianalysis executor``; a separate, opt-in process)."""

    env_prefix = _fields.PREFIX + "EXECUTOR_"

    backoff_limit: _fields.Tries = 0
    """``backoffLimit`` of workflow Jobs: retries after a failed Pod (0: a remediation runs once)."""

    default_deadline_seconds: _fields.WholeSeconds = 1800
    """``activeDeadlineSeconds`` of a workflow Job whose workflow declares no ``estimatedDuration``."""

    deadline_multiplier: _fields.Multiplier = 2.0
    """A Job's deadline is the workflow's ``estimatedDuration`` times this."""

    approval_policy: str = "workflowexecution-approval.kubernaut.io"
    """The ValidatingAdmissionPolicy (and binding of the same name) that makes the API server check
    ``spec.approval`` of every WorkflowExecution (shipped in ``crds/``). The executor runs an approved
    execution only when it was created after this policy, with the shipped content, came into force."""

    approval_policy_margin_seconds: _fields.Pause = 10.0
    """How long after the approval policy's last change an execution must have been created for its
    approval to count: the time every API server takes to see the change (timestamps have a
    one-second resolution)."""


class AutoExecuteSettings(_fields.Group):
    """``autoExecute``: run selections without ``aianalysis approve``, decided from server-side facts
    only: the analysis needs no review, its namespace is in the allowlist AND labelled
    ``<AIANALYSIS_EXECUTOR_AUTO_EXECUTE_NAMESPACE_LABEL>=true``, the catalog's ``riskLevel`` is at most
    the ceiling, and its confidence reaches the floor (never the spec's environment or riskTolerance)."""

    env_prefix = _fields.PREFIX + "EXECUTOR_AUTO_EXECUTE_"

    enabled: Annotated[_fields.Flag, _fields.Env("AIANALYSIS_EXECUTOR_AUTO_EXECUTE")] = False
    """Turn ``autoExecute`` on (off: every execution needs an approval)."""

    min_confidence: _fields.Fraction = 0.9
    """Confidence floor of ``autoExecute`` (one gate, never enough alone)."""

    namespaces: _fields.Names = ()
    """Namespaces (comma-separated) ``autoExecute`` may run in; empty: none."""

    namespace_label: str = "kubernaut.io/auto-execute"
    """The Namespace label (value ``true``) its owner sets to opt in to ``autoExecute``."""

    max_risk: Annotated[
        Risk,
        pydantic.BeforeValidator(_fields.Choice(("low", "medium", "high"), "must be low, medium or high")),
    ] = "low"
    """The highest catalog ``riskLevel`` ``autoExecute`` runs (low, medium or high)."""

    environments: _fields.Names = ()
    """When set: only namespaces whose environment label (``kubernaut.io/environment`` or
    ``kubernaut.ai/environment``) is listed (comma-separated). Never ``businessContext``."""

    max_age_seconds: _fields.Seconds = 600.0
    """``autoExecute`` only runs analyses completed this recently (enabling it never runs a backlog)."""


class GuardsSettings(_fields.Group):
    """Guards before any execution, approved or automatic: cooldowns, failure backoff, cluster-wide
    caps."""

    env_prefix = _fields.PREFIX + "EXECUTOR_"

    cooldown_seconds: _fields.Pause = 1800.0
    """The same workflow does not run again on the same target within this time (0: off)."""

    failure_threshold: _fields.Tries = 3
    """After this many consecutive failed or ineffective executions on a target, the next waits
    ``AIANALYSIS_EXECUTOR_FAILURE_BACKOFF_SECONDS`` (doubling per further failure; 0: off)."""

    failure_backoff_seconds: _fields.Pause = 900.0
    """The first backoff after ``AIANALYSIS_EXECUTOR_FAILURE_THRESHOLD`` failures."""

    failure_backoff_max_seconds: _fields.Pause = 86400.0
    """The longest backoff (at least the first one)."""

    managed_label: str = "kubernaut.io/auto-execute"
    """Automatic executions (``autoExecute``) run only where the namespace or the target carries this
    label with the value ``true``."""

    require_managed_label: _fields.Flag = True
    """Whether automatic executions need ``AIANALYSIS_EXECUTOR_MANAGED_LABEL`` (approved ones never do)."""

    max_concurrent: _fields.Tries = 5
    """Executions running at once, cluster-wide (0: no limit)."""

    max_per_hour: _fields.Tries = 20
    """Executions started in any rolling hour, cluster-wide (0: no limit)."""

    start_lock_namespace: str = ""
    """Namespace of the Lease (``aianalysis-executor-start``) that executor replicas hold while they
    count executions against the cluster-wide caps and mark one started, so that several replicas
    cannot overshoot a cap together. Empty: a lock within this process only (one executor). The
    chart sets it to the release namespace."""

    def conflicts(self) -> list[str]:
        if self.failure_backoff_max_seconds < self.failure_backoff_seconds:
            return [f"{self.env_name('failure_backoff_max_seconds')} must be at least the first backoff"]
        return []
