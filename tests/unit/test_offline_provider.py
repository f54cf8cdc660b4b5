"""The offline provider: deterministic evidence-first answers that pass (or knowingly fail) the
real validator, through the same catalog tools the LLM uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aianalysis import catalog, resources, settings
from aianalysis.analysis import answer, conversation, offline, tools, validation
from aianalysis.analysis.llm import make_provider
from aianalysis.analysis.offline import answers
from aianalysis.evaluation import runner, suite
from aianalysis.evaluation.cluster import InMemoryCluster

ROOT = Path(__file__).resolve().parents[2]


def workflow(
    workflow_id: str,
    *,
    signal: str = "OOMKilled",
    description: str = "Remediates OOMKilled containers",
    parameters: list[dict[str, Any]] | None = None,
    version: str = "1.0.0",
    component: list[str] | None = None,
) -> catalog.Workflow:
    spec = resources.RemediationWorkflowSpec.model_validate(
        {
            "workflowId": workflow_id,
            "version": version,
            "title": workflow_id.replace("-", " "),
            "description": description,
            "labels": {"signalTypes": [signal], "component": component},
            "riskLevel": "low",
            "parameters": parameters or [],
            "execution": {"containerImage": f"registry.example/{workflow_id}:1"},
        }
    )
    return catalog.Workflow(name=f"{workflow_id}-{version.replace('.', '-')}", spec=spec)


NS = {"name": "TARGET_NAMESPACE", "type": "string", "required": True}
KIND = {
    "name": "TARGET_RESOURCE_KIND",
    "type": "string",
    "required": True,
    "enum": ["deployment", "statefulset"],
}
NAME = {"name": "TARGET_RESOURCE_NAME", "type": "string", "required": True}
MEMORY = {"name": "MEMORY_LIMIT_NEW", "type": "string", "required": True, "pattern": "^[0-9]+(Mi|Gi)$"}
STRATEGY = {
    "name": "STRATEGY",
    "type": "string",
    "required": True,
    "enum": ["rolling", "recreate"],
    "default": "rolling",
}

INCREASE_MEMORY = workflow("oomkill-increase-memory", parameters=[NS, NAME, MEMORY])
RESTART = workflow("oomkill-restart-deployment", parameters=[NS, KIND, NAME, STRATEGY])
ROLLBACK = workflow(
    "oomkill-rollback-deployment",
    parameters=[NS, {"name": "DEPLOYMENT_NAME", "type": "string", "required": True}],
)
DRAIN = workflow(
    "node-drain",
    signal="NodeNotReady",
    parameters=[{"name": "NODE_NAME", "type": "string", "required": True}],
)


def spec(*, recovery: dict[str, Any] | None = None, kind: str = "Deployment") -> resources.AIAnalysisSpec:
    data: dict[str, Any] = {
        "signal": {
            "type": "OOMKilled",
            "severity": "critical",
            "alertName": "PodOOMKilled",
            "errorMessage": "Container killed due to OOM",
        },
        "resource": {"kind": kind, "name": "payment-api", "namespace": "production"},
        "businessContext": {"environment": "production", "priority": "P1"},
    }
    if recovery:
        data["recovery"] = recovery
    return resources.AIAnalysisSpec.model_validate(data)


class RecordingToolbox:
    """The real ``tools.ToolBox`` (no cluster), recording calls; ``order`` re-sorts search hits
    so a test can fix the ranking it is about instead of depending on the index's scoring."""

    def __init__(
        self, index: catalog.Catalog, incident: resources.AIAnalysisSpec, *, order: list[str] | None = None
    ) -> None:
        self.box = tools.ToolBox(spec=incident, catalog=index, reader=None, max_chars=8000)
        self._order = order
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @property
    def seen(self) -> dict[str, set[str]]:
        return self.box.seen

    def definitions(self) -> list[dict[str, Any]]:
        return self.box.definitions()

    async def call(self, name: str, arguments: dict[str, Any]) -> tools.ToolResult:
        self.calls.append((name, arguments))
        result = await self.box.call(name, arguments)
        if name != "search_workflow_catalog" or self._order is None or result.is_error:
            return result
        assert isinstance(result.data, tools.CatalogResult)
        order = self._order
        payload = dict(result.data.payload)
        payload["workflows"] = sorted(payload["workflows"], key=lambda hit: order.index(hit["workflow_id"]))
        return tools.ToolResult(json.dumps(payload), data=tools.CatalogResult(payload=payload))


def verdict(
    submission: conversation.Submission,
    *,
    index: catalog.Catalog,
    toolbox: RecordingToolbox,
    incident: resources.AIAnalysisSpec,
) -> validation.Verdict:
    return validation.validate(
        raw=submission.raw,
        truncated=submission.truncated,
        catalog=index,
        seen=toolbox.seen,
        business=incident.business_context,
        recovery=incident.recovery,
        prose=submission.prose,
    )


def converse(
    index: catalog.Catalog, incident: resources.AIAnalysisSpec, *, order: list[str] | None = None
) -> tuple[offline.OfflineConversation, RecordingToolbox]:
    toolbox = RecordingToolbox(index, incident, order=order)
    conversation = offline.OfflineProvider().open(
        system="ignored", prompt="ignored", toolbox=toolbox, spec=incident
    )
    return conversation, toolbox


def selected(submission: conversation.Submission) -> dict[str, Any]:
    assert submission.raw is not None
    chosen = submission.raw["selected_workflow"]
    assert isinstance(chosen, dict)
    return chosen


# ---------------------------------------------------------------------------------------------


async def test_selects_the_first_hit_and_passes_validation() -> None:
    index = catalog.Catalog([INCREASE_MEMORY, RESTART, DRAIN])
    incident = spec()
    conversation, toolbox = converse(
        index, incident, order=["oomkill-restart-deployment", "oomkill-increase-memory"]
    )

    submission = await conversation.answer()

    chosen = selected(submission)
    assert chosen["workflow_id"] == "oomkill-restart-deployment"
    assert chosen["parameters"] == {
        "TARGET_NAMESPACE": "production",
        "TARGET_RESOURCE_KIND": "deployment",
        "TARGET_RESOURCE_NAME": "payment-api",
    }
    result = verdict(submission, index=index, toolbox=toolbox, incident=incident)
    assert result.valid, result.errors
    assert result.parameters["STRATEGY"] == "rolling"  # default filled by the validator
    assert answer.SelectionAnswer.model_validate(submission.raw).needs_human_review is False


async def test_rank_first_the_best_hit_wins_even_when_a_lower_one_is_easier_to_fill() -> None:
    """The issue's finding: skipping the best-ranked workflow for one whose parameters are easier
    made the offline default pick the expected workflow less often than plain ranking."""
    index = catalog.Catalog([INCREASE_MEMORY, RESTART])
    incident = spec()
    conversation, toolbox = converse(
        index, incident, order=["oomkill-increase-memory", "oomkill-restart-deployment"]
    )

    first = await conversation.answer()
    again = await conversation.correct(verdict(first, index=index, toolbox=toolbox, incident=incident).errors)

    assert selected(first)["workflow_id"] == selected(again)["workflow_id"] == "oomkill-increase-memory"
    result = verdict(again, index=index, toolbox=toolbox, incident=incident)
    assert result.rules_failed == ["missing_parameter"]
    assert [a["workflow_id"] for a in again.raw["alternative_workflows"]] == ["oomkill-restart-deployment"]  # type: ignore[index]


async def test_a_workflow_that_does_not_act_on_the_targets_kind_is_skipped() -> None:
    node_only = workflow(
        "oomkill-node-pressure",
        parameters=[{"name": "NODE_NAME", "type": "string", "required": True}],
        component=["node"],
    )
    index = catalog.Catalog([node_only, RESTART])
    incident = spec()
    conversation, toolbox = converse(
        index, incident, order=["oomkill-node-pressure", "oomkill-restart-deployment"]
    )

    submission = await conversation.answer()

    assert selected(submission)["workflow_id"] == "oomkill-restart-deployment"
    assert verdict(submission, index=index, toolbox=toolbox, incident=incident).valid


async def test_without_a_cluster_it_tries_to_investigate_then_searches_with_the_alert_words() -> None:
    conversation, toolbox = converse(catalog.Catalog([RESTART]), spec())

    await conversation.answer()

    assert toolbox.calls == [
        # the investigation starts with the incident's object (no cluster here: nothing to read)
        ("get_resource", {"kind": "Deployment", "name": "payment-api", "namespace": "production"}),
        (
            "search_workflow_catalog",
            {
                "signal_type": "OOMKilled",
                "query": "OOMKilled PodOOMKilled Container killed due to OOM",
                "top_k": 10,
            },
        ),
        ("get_workflow_details", {"workflow_id": "oomkill-restart-deployment", "version": "1.0.0"}),
    ]
    assert conversation.usage == resources.LLMUsage(
        provider="offline", model=offline.MODEL_NAME, tool_calls=3
    )


async def test_kind_specific_names_are_filled_only_for_that_kind() -> None:
    index = catalog.Catalog([ROLLBACK])
    on_deployment = await converse(index, spec())[0].answer()
    on_statefulset = await converse(index, spec(kind="StatefulSet"))[0].answer()

    assert selected(on_deployment)["parameters"]["DEPLOYMENT_NAME"] == "payment-api"
    assert "DEPLOYMENT_NAME" not in selected(on_statefulset)["parameters"]


async def test_kind_outside_the_enum_is_not_guessed() -> None:
    index = catalog.Catalog([RESTART])

    submission = await converse(index, spec(kind="DaemonSet"))[0].answer()

    assert "TARGET_RESOURCE_KIND" not in selected(submission)["parameters"]


async def test_unfillable_required_parameter_submits_best_candidate_for_parameters_incomplete() -> None:
    index = catalog.Catalog([INCREASE_MEMORY])
    incident = spec()
    conversation, toolbox = converse(index, incident)

    submission = await conversation.answer()

    chosen = selected(submission)
    assert chosen["workflow_id"] == "oomkill-increase-memory"
    assert "MEMORY_LIMIT_NEW" not in chosen["parameters"]
    assert any("MEMORY_LIMIT_NEW" in warning for warning in submission.raw["warnings"])  # type: ignore[index]
    result = verdict(submission, index=index, toolbox=toolbox, incident=incident)
    assert not result.valid
    assert any("MEMORY_LIMIT_NEW" in error for error in result.errors)


async def test_no_hits_asks_for_human_review() -> None:
    incident = spec()
    conversation, toolbox = converse(catalog.Catalog([DRAIN]), incident)

    submission = await conversation.answer()

    assert submission.raw is not None
    assert submission.raw["selected_workflow"] is None
    assert submission.raw["needs_human_review"] is True
    assert submission.raw["human_review_reason"] == "no_eligible_workflow"
    assert verdict(submission, index=catalog.Catalog([DRAIN]), toolbox=toolbox, incident=incident).valid


async def test_correct_moves_to_the_next_candidate_unless_only_parameters_were_rejected() -> None:
    index = catalog.Catalog([RESTART, ROLLBACK, INCREASE_MEMORY])
    order = ["oomkill-restart-deployment", "oomkill-rollback-deployment", "oomkill-increase-memory"]
    conversation, _ = converse(index, spec(), order=order)

    submitted = [await conversation.answer()]
    submitted.append(await conversation.correct(["[component_mismatch] rejected"]))
    submitted.append(await conversation.correct(["[missing_parameter] X is required"]))
    for _ in range(2):
        submitted.append(await conversation.correct(["[policy] rejected"]))

    assert [selected(s)["workflow_id"] for s in submitted] == [
        "oomkill-restart-deployment",
        "oomkill-rollback-deployment",
        "oomkill-rollback-deployment",  # parameters only: the choice stands
        "oomkill-increase-memory",
        "oomkill-increase-memory",  # nothing left: the last answer again
    ]


async def test_confidence_is_capped_and_never_certain() -> None:
    index = catalog.Catalog([RESTART])

    submission = await converse(index, spec())[0].answer()

    assert 0 < selected(submission)["confidence"] <= answers.MAX_CONFIDENCE


async def test_recovery_prefers_a_workflow_that_has_not_failed_yet() -> None:
    index = catalog.Catalog([RESTART, ROLLBACK])
    incident = spec(
        recovery={
            "attemptNumber": 1,
            "previousExecutions": [
                {
                    "workflowExecutionRef": "payment-oom-1-exec-1",
                    "originalRCA": {"summary": "limit too low", "signalType": "OOMKilled"},
                    "selectedWorkflow": {
                        "workflowId": "oomkill-restart-deployment",
                        "version": "1.0.0",
                        "parameters": {"TARGET_NAMESPACE": "production"},
                    },
                    "failure": {"reason": "OOMKilled", "message": "killed again after restart"},
                }
            ],
        }
    )
    order = ["oomkill-restart-deployment", "oomkill-rollback-deployment"]
    conversation, toolbox = converse(index, incident, order=order)

    submission = await conversation.answer()

    assert selected(submission)["workflow_id"] == "oomkill-rollback-deployment"
    assert submission.raw is not None
    assert submission.raw["recovery_strategy"]["approach"] == "alternative_workflow"
    assert submission.raw["recovery_strategy"]["differs_from_previous"] is True
    assessment = submission.raw["recovery_analysis"]["previous_attempt_assessment"]
    assert "killed again after restart" in assessment["failure_reason_analysis"]
    result = verdict(submission, index=index, toolbox=toolbox, incident=incident)
    assert result.valid, result.errors


async def test_recovery_never_resubmits_a_failed_workflow_and_asks_for_review_when_none_is_left() -> None:
    index = catalog.Catalog([RESTART])
    incident = spec(
        recovery={
            "attemptNumber": 1,
            "previousExecutions": [
                {
                    "workflowExecutionRef": "exec-1",
                    "originalRCA": {"summary": "limit too low", "signalType": "OOMKilled"},
                    "selectedWorkflow": {"workflowId": "oomkill-restart-deployment", "version": "1.0.0"},
                    "failure": {"reason": "DeadlineExceeded"},
                }
            ],
        }
    )
    conversation, toolbox = converse(index, incident)

    submission = await conversation.answer()

    assert submission.raw is not None and submission.raw["selected_workflow"] is None
    assert submission.raw["human_review_reason"] == "no_eligible_workflow"
    result = verdict(submission, index=index, toolbox=toolbox, incident=incident)
    assert result.valid, result.errors


async def test_make_provider_offline_needs_no_network_or_key() -> None:
    provider = make_provider(settings.Settings(llm=settings.LlmSettings(provider="offline")))

    assert (provider.name, provider.model) == ("offline", offline.MODEL_NAME)
    await provider.aclose()


async def test_with_a_cluster_the_target_is_the_first_object_up_the_owner_chain_the_workflow_acts_on() -> (
    None
):
    """A Pod incident: the workflow acts on Deployments, so the offline provider reads the owner
    chain (Pod -> ReplicaSet -> Deployment) and targets the Deployment, never the symptom."""

    def owned(kind: str, name: str, owner: tuple[str, str] | None, api: str = "apps/v1") -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": "production", "uid": f"uid-{name}"}
        if owner:
            meta["ownerReferences"] = [{"kind": owner[0], "name": owner[1], "uid": f"uid-{owner[1]}"}]
        return {"apiVersion": api, "kind": kind, "metadata": meta}

    cluster = InMemoryCluster(
        [
            owned("Deployment", "payment-api", None),
            owned("ReplicaSet", "payment-api-7d9f", ("Deployment", "payment-api")),
            owned("Pod", "payment-api-7d9f-abcde", ("ReplicaSet", "payment-api-7d9f"), api="v1"),
        ]
    )
    deployments_only = workflow(
        "oomkill-restart-deployment", parameters=[NS, KIND, NAME, STRATEGY], component=["deployment"]
    )
    incident = spec(kind="Pod")
    pod = incident.model_copy(
        update={
            "resource": resources.ResourceRef(
                kind="Pod", name="payment-api-7d9f-abcde", namespace="production"
            )
        }
    )
    box = tools.ToolBox(spec=pod, catalog=catalog.Catalog([deployments_only]), reader=cluster, max_chars=8000)
    conversation = offline.OfflineProvider().open(system="", prompt="", toolbox=box, spec=pod)

    submission = await conversation.answer()

    assert submission.raw is not None
    assert submission.raw["affected_resource"] == {
        "kind": "Deployment",
        "name": "payment-api",
        "namespace": "production",
    }
    assert selected(submission)["parameters"]["TARGET_RESOURCE_NAME"] == "payment-api"


async def test_the_demo_incidents_are_picked_confidently_and_correctly_from_the_cluster_evidence() -> None:
    """examples/demo: each incident with the cluster state the demo writes; what a newcomer sees."""
    scenarios = suite.load_scenarios([ROOT / "examples" / "demo"])
    index = catalog.load_paths([ROOT / "examples" / "catalog"])

    results = await runner.run_all(
        scenarios, index=index, provider=offline.OfflineProvider(), settings=settings.Settings()
    )

    assert [r.scenario for r in results if not r.correct] == []
    selections = [r for r in results if r.selected_workflow]
    assert len(selections) >= len(results) - 2
    assert all(
        r.confidence is not None and r.confidence >= 0.7 and not r.needs_human_review for r in selections
    )
    assert all(r.parameters_matched is not False for r in results)
    declined = [r for r in results if not r.selected_workflow]
    assert {r.human_review_reason for r in declined} == {"inconclusive", "no_eligible_workflow"}
    why = {r.human_review_reason: (r.status or {})["rootCause"]["summary"] for r in declined}
    assert "contradicts" in why["inconclusive"] or "OOM-killed" in why["inconclusive"]
    assert "risk_tolerance=low" in why["no_eligible_workflow"], "a policy decline says which policy"


async def test_a_replaced_pod_leads_to_its_deployment_whose_crash_logs_name_the_configuration() -> None:
    """The alert names a Pod that was replaced since: its name leads to the Deployment, whose
    crashing Pod's previous run logged a configuration error while the template did not change.
    Of two workflows for the crash loop, the one that takes the ConfigMap's name is chosen, with
    the name the evidence found."""
    meta = {"namespace": "production"}
    template = {
        "containers": [{"name": "api", "image": "registry.example/api:2.1", "envFrom": []}],
        "volumes": [{"name": "config", "configMap": {"name": "api-config"}}],
    }
    crashing = {
        "name": "api",
        "ready": False,
        "restartCount": 7,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"reason": "Error", "exitCode": 2}},
    }
    cluster = InMemoryCluster(
        [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "api", **meta},
                "spec": {"template": {"spec": template}},
            },
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "api-config", **meta}},
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": "api-6b7c8d9f5-p2x7q",
                    **meta,
                    "ownerReferences": [{"kind": "Deployment", "name": "api", "controller": True}],
                },
                "spec": {**template, "nodeName": "n1"},
                "status": {"phase": "Running", "containerStatuses": [crashing]},
            },
        ],
        logs={"api-6b7c8d9f5-p2x7q": suite.PodLog(previous="fatal: settings.yaml: unknown key 'tls_mode'\n")},
    )
    config_map = {"name": "TARGET_CONFIGMAP_NAME", "type": "string", "required": True}
    restart = workflow(
        "graceful-restart-deployment",
        signal="ConfigurationError",
        description="Restarts a crash looping deployment so it reloads its configuration from the ConfigMap",
        parameters=[NS, KIND, NAME],
    )
    hotfix = workflow(
        "hotfix-configmap",
        signal="ConfigurationError",
        description="Restores a crash looping deployment's ConfigMap from its last good version",
        parameters=[NS, KIND, NAME, config_map],
    )
    incident = spec().model_copy(
        update={
            "signal": spec().signal.model_copy(update={"type": "CrashLoopBackOff"}),
            "resource": resources.ResourceRef(kind="Pod", name="api-5f4d3c2b1-zz9k8", namespace="production"),
        }
    )
    box = tools.ToolBox(
        spec=incident, catalog=catalog.Catalog([restart, hotfix]), reader=cluster, max_chars=8000
    )
    conversation = offline.OfflineProvider().open(system="", prompt="", toolbox=box, spec=incident)

    submission = await conversation.answer()

    chosen = selected(submission)
    assert chosen["workflow_id"] == "hotfix-configmap"
    assert chosen["parameters"]["TARGET_CONFIGMAP_NAME"] == "api-config"
    assert "unknown key" in chosen["rationale"] and "api-config" in chosen["rationale"]
    assert submission.raw is not None
    assert submission.raw["affected_resource"]["kind"] == "Deployment"


async def test_a_workflow_that_failed_on_a_guessed_override_is_retried_without_it() -> None:
    """The image rollback failed because it was given a malformed explicit image; the evidence
    (the tag does not exist, the previous revision ran) supports the same workflow without the
    override, which is a different attempt — not a repeat."""
    scenarios = suite.load_scenarios(
        [ROOT / "examples" / "eval" / "recovery" / "rec-invalidimagename-bad-override.yaml"]
    )
    index = catalog.load_paths([ROOT / "examples" / "catalog"])

    [result] = await runner.run_all(
        scenarios, index=index, provider=offline.OfflineProvider(), settings=settings.Settings()
    )

    assert result.selected_workflow == "image-rollback-tag"
    assert "IMAGE_OVERRIDE" not in result.parameters
    strategy = ((result.status or {}).get("recovery") or {}).get("recoveryStrategy") or {}
    assert strategy.get("approach") == "same_workflow_new_parameters" and strategy.get("differsFromPrevious")


async def test_a_configuration_error_never_falls_back_to_the_crash_loop_remedies() -> None:
    """No workflow for configuration errors in the catalog: the crash-loop workflows (rollback,
    restart, probes) would not fix it, so a person decides, and the root cause says why."""
    scenarios = suite.load_scenarios(
        [ROOT / "examples" / "eval" / "held-back" / "hb-settings-api-config-rejected.yaml"]
    )
    index = catalog.load_paths([ROOT / "examples" / "catalog"])

    [result] = await runner.run_all(
        scenarios, index=index, provider=offline.OfflineProvider(), settings=settings.Settings()
    )

    assert result.selected_workflow is None
    assert result.human_review_reason == "no_eligible_workflow"
    assert "settings-api-conf" in (result.status or {})["rootCause"]["summary"]


async def test_a_cronjob_s_run_that_failed_again_when_re_run_is_suspended_not_re_run() -> None:
    """One failed Job of a CronJob is not yet a pattern; its re-run by an earlier remediation
    failing as a Job fails (the recovery history) makes it one: suspend the CronJob itself."""
    scenarios = suite.load_scenarios(
        [ROOT / "examples" / "eval" / "recovery" / "rec-backofflimitexceeded-lock-held.yaml"]
    )
    index = catalog.load_paths([ROOT / "examples" / "catalog"])

    [result] = await runner.run_all(
        scenarios, index=index, provider=offline.OfflineProvider(), settings=settings.Settings()
    )

    assert result.selected_workflow == "cronjob-suspend"
    assert (result.parameters["TARGET_RESOURCE_KIND"], result.parameters["TARGET_RESOURCE_NAME"]) == (
        "CronJob",
        "warehouse-sync",
    )
    assert "2 Jobs of CronJob" in (result.status or {})["rootCause"]["summary"]


def _multi_attach_cluster(*, old_node: dict[str, Any] | None) -> InMemoryCluster:
    """A StatefulSet Pod on n1 whose claim's volume a VolumeAttachment still binds to n9."""
    meta = {"namespace": "production"}
    return InMemoryCluster(
        [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "db-0", **meta},
                "spec": {
                    "nodeName": "n1",
                    "containers": [{"name": "db", "image": "registry.example/db:1"}],
                    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}],
                },
                "status": {
                    "phase": "Pending",
                    "containerStatuses": [
                        {"name": "db", "ready": False, "state": {"waiting": {"reason": "ContainerCreating"}}}
                    ],
                },
            },
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data-db-0", **meta},
                "spec": {"volumeName": "pvc-1234"},
                "status": {"phase": "Bound"},
            },
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "VolumeAttachment",
                "metadata": {"name": "csi-0a1b"},
                "spec": {
                    "attacher": "ebs.csi.aws.com",
                    "nodeName": "n9",
                    "source": {"persistentVolumeName": "pvc-1234"},
                },
                "status": {"attached": True},
            },
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": "db-0.attach", **meta},
                "involvedObject": {"kind": "Pod", "name": "db-0", "namespace": "production"},
                "type": "Warning",
                "reason": "FailedAttachVolume",
                "message": 'Multi-Attach error for volume "pvc-1234" Volume is already exclusively attached '
                "to one node and can't be attached to another",
            },
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {}},
            *([old_node] if old_node else []),
        ]
    )


async def test_a_volume_attached_to_a_deleted_node_is_force_detached_and_one_on_a_live_node_is_not() -> None:
    """The VolumeAttachment tells which node holds the volume; the API server, whether that node
    still exists: gone → the force-detach, with the PersistentVolume's name; there but not
    reporting → a person decides, and the answer says why."""
    pv = {"name": "PERSISTENT_VOLUME_NAME", "type": "string", "required": True}
    detach = workflow(
        "volume-force-detach",
        signal="FailedAttachVolume",
        description="Deletes the VolumeAttachment that binds the volume to an old node",
        parameters=[NS, {**KIND, "enum": ["Pod"]}, NAME, pv],
    )
    incident = spec().model_copy(
        update={
            "signal": spec().signal.model_copy(update={"type": "FailedAttachVolume"}),
            "resource": resources.ResourceRef(kind="Pod", name="db-0", namespace="production"),
        }
    )
    unreachable = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n9"},
        "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
    }
    answers = []
    for old_node in (None, unreachable):
        box = tools.ToolBox(
            spec=incident,
            catalog=catalog.Catalog([detach]),
            reader=_multi_attach_cluster(old_node=old_node),
            max_chars=8000,
        )
        conversation = offline.OfflineProvider().open(system="", prompt="", toolbox=box, spec=incident)
        answers.append((await conversation.answer()).raw)

    gone, alive = answers
    assert gone is not None and alive is not None
    assert gone["selected_workflow"]["workflow_id"] == "volume-force-detach"
    assert gone["selected_workflow"]["parameters"]["PERSISTENT_VOLUME_NAME"] == "pvc-1234"
    assert gone["selected_workflow"]["parameters"]["TARGET_RESOURCE_NAME"] == "db-0"
    assert "no Node n9" in gone["selected_workflow"]["rationale"]
    assert alive["selected_workflow"] is None and alive["needs_human_review"]
    assert "Node n9 still exists and stopped reporting" in alive["warnings"][0]


async def test_a_database_claim_and_a_pressured_node_are_read_through_the_listing_and_top_tools() -> None:
    """The claim's Pod is found by the StatefulSet naming convention through the listing tool
    (its container runs postgres: expand, not clean); the pressured Node's memory use comes from
    the metrics API through ``top`` (the memory to free)."""
    scenarios = suite.load_scenarios(
        [
            ROOT / "examples" / "eval" / "incidents" / "orders-postgres-pvc-filling-up.yaml",
            ROOT / "examples" / "eval" / "incidents" / "node-memorypressure-batch.yaml",
        ]
    )
    index = catalog.load_paths([ROOT / "examples" / "catalog"])

    claim, node = await runner.run_all(
        scenarios, index=index, provider=offline.OfflineProvider(), settings=settings.Settings()
    )

    assert claim.selected_workflow == "pvc-expand" and claim.parameters["NEW_SIZE"] == "150Gi"
    assert "runs postgres" in (claim.status or {})["rootCause"]["summary"]
    assert node.selected_workflow == "memory-pressure-relief"
    assert node.parameters["MEMORY_FREE_TARGET"] == "11Gi"
    assert "metrics API reports Node" in (node.status or {})["rootCause"]["summary"]


class Textless:
    """The real tool box with every tool's text replaced: what the offline provider reads must be
    the values the tools return beside their text (``ToolResult.data``), never the text."""

    def __init__(self, box: tools.ToolBox) -> None:
        self.box = box

    def definitions(self) -> list[dict[str, Any]]:
        return self.box.definitions()

    async def call(self, name: str, arguments: dict[str, Any]) -> tools.ToolResult:
        result = await self.box.call(name, arguments)
        return tools.ToolResult("(text withheld)", is_error=result.is_error, data=result.data)


async def test_the_offline_provider_reads_the_tools_values_never_their_text() -> None:
    """A changed column, header or fence cannot change what the rules see: with every text
    withheld, the answers to the demo's incidents are the same."""
    index = catalog.load_paths([ROOT / "examples" / "catalog"])
    recognised = 0
    for found in suite.load_scenarios([ROOT / "examples" / "demo"]):
        answers_given = []
        for wrap in (lambda box: box, Textless):
            box = tools.ToolBox(
                spec=found.spec, catalog=index, reader=InMemoryCluster.of(found), max_chars=8000
            )
            conversation = offline.OfflineProvider().open(
                system="", prompt="", toolbox=wrap(box), spec=found.spec
            )
            answers_given.append((await conversation.answer()).raw)
        assert answers_given[0] == answers_given[1], found.name
        assert answers_given[0] is not None
        recognised += "no analyzer recognised" not in answers_given[0]["analysis_summary"]
    # every one but calico-node's, which no rule covers (its catalog's workflows are excluded by policy)
    assert recognised == 7, "the answers rest on the evidence the tools returned"
