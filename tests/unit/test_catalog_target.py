"""catalog.target: which parameters the system fills, which kinds a workflow may act on, and which
detected facts it requires."""

from __future__ import annotations

import pytest

from aianalysis import catalog, resources


def _param(name: str, from_target: str | None = None) -> resources.WorkflowParameter:
    return resources.WorkflowParameter.model_validate(
        {"name": name, "type": "string", **({"fromTarget": from_target} if from_target else {})}
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("TARGET_RESOURCE_NAME", "name"),
        ("TARGET_RESOURCE_KIND", "kind"),
        ("TARGET_RESOURCE_NAMESPACE", "namespace"),
        ("TARGET_RESOURCE_API_VERSION", "apiVersion"),
        ("TARGET_NAMESPACE", "namespace"),
        ("NAMESPACE", "namespace"),
        ("TARGET_KIND", "kind"),
        ("MEMORY_LIMIT", None),
        ("NODE_NAME", None),
    ],
)
def test_naming_convention_marks_target_parameters(name: str, expected: str | None) -> None:
    assert catalog.target_field(_param(name)) == expected


def test_from_target_overrides_the_convention_both_ways() -> None:
    assert catalog.target_field(_param("DEPLOYMENT", from_target="name")) == "name"
    assert catalog.target_field(_param("NAMESPACE", from_target="none")) is None


def test_from_target_rejects_unknown_fields() -> None:
    with pytest.raises(ValueError, match="fromTarget"):
        _param("X", from_target="uid")


@pytest.mark.parametrize(
    ("components", "kind", "api_version", "admitted"),
    [
        (None, "Deployment", "apps/v1", True),
        ([], "Node", None, True),
        (["*"], "Node", "v1", True),
        (["deployment"], "Deployment", "apps/v1", True),
        (["Deployment"], "deployment", None, True),
        (["node"], "Deployment", "apps/v1", False),
        (["apps/v1/Deployment"], "Deployment", "apps/v1", True),
        (["apps/v1/Deployment"], "Deployment", None, True),
        (["apps/v1/Deployment"], "Deployment", "extensions/v1beta1", False),
        (["v1/Pod"], "Pod", "v1", True),
        (["v1/Pod", "apps/v1/StatefulSet"], "Deployment", "apps/v1", False),
        (["v1/Node", "apps/v1/Deployment"], "Deployment", "apps/v1", True),
    ],
)
def test_component_admits(
    components: list[str] | None, kind: str, api_version: str | None, admitted: bool
) -> None:
    assert catalog.component_admits(components, kind=kind, api_version=api_version) is admitted


def _required(**wire: object) -> resources.DetectedLabels:
    return resources.DetectedLabels.model_validate(wire)


def test_no_requirement_admits_unknown_targets() -> None:
    assert catalog.detected_labels_admit(None, None)
    assert catalog.detected_labels_admit(_required(), None)


def test_boolean_requirement_needs_the_same_known_fact() -> None:
    required = _required(hpaEnabled=True)
    assert catalog.detected_labels_admit(required, catalog.TargetFacts(hpa_enabled=True))
    assert not catalog.detected_labels_admit(required, catalog.TargetFacts(hpa_enabled=False))
    assert not catalog.detected_labels_admit(required, catalog.TargetFacts())
    assert not catalog.detected_labels_admit(required, None)
    not_gitops = _required(gitOpsManaged=False)
    assert catalog.detected_labels_admit(not_gitops, catalog.TargetFacts(gitops_managed=False))
    assert not catalog.detected_labels_admit(not_gitops, catalog.TargetFacts(gitops_managed=True))


def test_tool_requirement_matches_exactly_or_any_with_wildcard() -> None:
    argocd = _required(gitOpsTool="argocd")
    assert catalog.detected_labels_admit(argocd, catalog.TargetFacts(gitops_tool="ArgoCD"))
    assert not catalog.detected_labels_admit(argocd, catalog.TargetFacts(gitops_tool="flux"))
    anything = _required(gitOpsTool="*")
    assert catalog.detected_labels_admit(anything, catalog.TargetFacts(gitops_tool="flux"))
    assert not catalog.detected_labels_admit(anything, catalog.TargetFacts(gitops_tool=None))


def test_unmet_requirements_are_explained_with_wire_names() -> None:
    reasons = catalog.unmet_detected_labels(
        _required(pdbProtected=True, gitOpsTool="flux"), catalog.TargetFacts(pdb_protected=False)
    )
    assert reasons == [
        "detectedLabels.gitOpsTool requires 'flux' but the target's is unknown",
        "detectedLabels.pdbProtected requires True but the target's is False",
    ]
