"""Redaction against a corpus: every secret shape caught wherever it appears (free text, an env
value, a ConfigMap value, an annotation, a custom resource), and the false-positive rate measured on
ordinary manifests, events and logs — with the evidence an analysis needs (digests, uids,
resourceVersions, image references) left alone."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis.analysis import redact
from aianalysis.analysis.redact import _gitleaks
from aianalysis.kube import kind_table
from tests.support import secret_shapes

ROOT = Path(__file__).resolve().parents[2]
ORDINARY = [
    ROOT / "tests" / "corpus" / "redaction" / "ordinary.yaml",
    *sorted((ROOT / "examples").rglob("*.yaml")),
    *sorted((ROOT / "deploy").rglob("*.yaml")),
    *sorted((ROOT / "crds").rglob("*.yaml")),
]
BUILTIN = {k.kind for k in kind_table.KINDS}
FALSE_POSITIVE_BOUND = 0.01
"""At most this share of the ordinary corpus' string values may be changed (measured: see the
README's Security model)."""


def _placements(text: str) -> Iterator[tuple[str, str]]:
    """The shape's text where cluster data carries it, each rendered as the LLM would get it."""
    yield "text", redact.redact_text(text)
    config_map = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"app.conf": text}}
    yield "configmap", str(redact.redact_object(config_map))
    pod = {
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": {"example.com/config": text}},
        "spec": {
            "containers": [{"name": "c", "env": [{"name": "APP_CONFIG", "value": text}], "args": [text]}]
        },
    }
    yield "pod", str(redact.redact_object(pod))
    custom = {"kind": "Thing", "metadata": {"name": "t"}, "spec": {"config": text}}
    yield "custom", str(redact.redact_custom(custom))


@pytest.mark.parametrize(
    ("shape", "text", "secrets"), secret_shapes.SHAPES, ids=[s[0] for s in secret_shapes.SHAPES]
)
def test_every_secret_shape_is_caught_wherever_it_appears(shape: str, text: str, secrets: list[str]) -> None:
    for where, out in _placements(text):
        for secret in secrets:
            assert secret not in out and secret not in out.replace("\\n", "\n"), (shape, where)


@pytest.mark.parametrize(
    ("shape", "obj", "secrets"), secret_shapes.OBJECTS, ids=[s[0] for s in secret_shapes.OBJECTS]
)
def test_every_structured_secret_shape_is_caught(shape: str, obj: dict[str, Any], secrets: list[str]) -> None:
    redacted = redact.redact_object(obj) if obj["kind"] in BUILTIN else redact.redact_custom(obj)
    out = yaml.safe_dump(redacted)
    for secret in secrets:
        assert secret not in out, shape


def test_the_corpus_covers_the_shapes_the_issue_names() -> None:
    ids = {s[0] for s in secret_shapes.SHAPES} | {s[0] for s in secret_shapes.OBJECTS}
    for named in (
        "yaml-parent-key",
        "env-mysql-pwd",
        "env-db-pass",
        "env-redis-auth",
        "env-gh-creds",
        "dsn-postgres",
        "slack-webhook",
        "pem-rsa",
        "jwt-raw",
        "argocd-helm-parameters",
        "aws-access-key",
        "gcp-service-account-json",
        "azure-storage-connection-string",
        "stripe-live",
        "npm-token",
        "github-pat",
        "github-oauth",
        "github-user-to-server",
        "github-server-to-server",
        "github-refresh",
        "github-fine-grained",
        "basic-auth-url",
    ):
        assert named in ids, named


# ---- ordinary data: false positives, and the evidence left alone ------------------------------


def _documents() -> Iterator[dict[str, Any]]:
    for path in ORDINARY:
        for doc in yaml.safe_load_all(path.read_text()):
            yield from _objects(doc)


def _objects(node: Any) -> Iterator[dict[str, Any]]:
    """Every Kubernetes-looking object in a document (eval scenarios nest them), Secrets excepted
    (they hold secrets by definition, and are never read)."""
    if isinstance(node, dict):
        if isinstance(node.get("kind"), str) and node.get("kind") != "Secret":
            yield node
            return
        for value in node.values():
            yield from _objects(value)
    elif isinstance(node, list):
        for item in node:
            yield from _objects(item)


def _redacted(obj: dict[str, Any]) -> dict[str, Any]:
    if obj["kind"] in BUILTIN:
        return redact.redact_object(obj)
    if obj["kind"] in ("EventList", "Logs"):  # free text: events' messages, log lines
        return {k: _text_walk(v) for k, v in obj.items()}
    return redact.redact_custom(obj)


def _text_walk(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _text_walk(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_text_walk(v) for v in node]
    return redact.redact_text(node) if isinstance(node, str) else node


INTENDED = ("managedFields", redact.LAST_APPLIED)


def _changes(before: Any, after: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, before, after) of every string value changed; what the redaction drops on purpose
    (managedFields, the last-applied annotation) is not a change."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in before.items():
            if key in INTENDED:
                continue
            yield from _changes(value, after.get(key), f"{path}.{key}")
    elif isinstance(before, list) and isinstance(after, list):
        for i, (b, a) in enumerate(zip(before, after, strict=False)):
            yield from _changes(b, a, f"{path}[{i}]")
    elif before != after and not isinstance(before, (dict, list)):
        yield path, before, after


def _strings(node: Any) -> int:
    if isinstance(node, dict):
        return sum(_strings(v) for k, v in node.items() if k not in INTENDED)
    if isinstance(node, list):
        return sum(_strings(v) for v in node)
    return 1 if isinstance(node, str) else 0


def measure() -> tuple[int, list[tuple[str, Any, Any]]]:
    total, changed = 0, []
    for obj in _documents():
        total += _strings(obj)
        changed += [(f"{obj['kind']}{path}", b, a) for path, b, a in _changes(obj, _redacted(obj))]
    return total, changed


def test_false_positive_rate_on_ordinary_manifests_is_measured_and_bounded() -> None:
    total, changed = measure()
    rate = len(changed) / total
    print(f"\nordinary corpus: {total} string values, {len(changed)} redacted ({rate:.2%})")
    for path, before, after in changed:
        print(f"  {path}: {str(before)[:80]!r} -> {str(after)[:80]!r}")
    assert total > 2_000  # the corpus is not trivially small
    assert rate <= FALSE_POSITIVE_BOUND


EVIDENCE = re.compile(
    r"sha256:[0-9a-f]{64}"  # image digests
    r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"  # uids
    r"|containerd://[0-9a-f]{64}"  # container ids
    r"|\b[0-9a-f]{40}\b"  # commits
    r"|[a-z0-9.-]+/[a-z0-9./-]+:[0-9][\w.-]*"  # image references with a tag
)


def test_digests_uids_resource_versions_and_image_refs_are_evidence_not_secrets() -> None:
    evidence, versions = set(), []
    for obj in _documents():
        before, after = yaml.safe_dump(obj), yaml.safe_dump(_redacted(obj))
        for found in set(EVIDENCE.findall(before)):
            assert found in after, (obj["kind"], found)
            evidence.add(found)
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version:
            assert _redacted(obj)["metadata"]["resourceVersion"] == version
            versions.append(version)
    assert evidence and versions, "the documents hold no digest, uid or resourceVersion to keep"


# ---- the vendored rule set ---------------------------------------------------------------------


def test_the_gitleaks_rules_are_the_ones_recorded_never_edited_by_hand() -> None:
    """hack/refresh-gitleaks-rules.sh copies them and records their digest; an edit fails here."""
    source = _gitleaks.source()
    assert source["repository"] == "gitleaks/gitleaks" and len(source["commit"]) == 40
    rules = _gitleaks.read_packaged(_gitleaks.RULES_FILE)
    assert hashlib.sha256(rules).hexdigest() == source["sha256"]
    assert "This file has been auto-generated" in rules.decode()[:200]
    assert "MIT License" in _gitleaks.read_packaged("GITLEAKS-LICENSE").decode()


def test_every_gitleaks_rule_runs_on_re2() -> None:
    rules = _gitleaks.rules()
    assert len(rules.rules) > 200
    for rule in rules.rules:
        assert rule.compiled.groups >= rule.secret_group, rule.id
        for allowlist in rule.allowlists:
            assert allowlist.compiled is not None


def test_the_gitleaks_semantics_entropy_groups_and_allowlists() -> None:
    rules = _gitleaks.rules()
    # generic-api-key: a low-entropy value is not a secret, the secret is the group, not the match.
    assert list(rules.spans("api_key = aaaaaaaaaaaa")) == []
    text = "api_key = Zx81Qm2Lp0Vb7Ty4"
    ((start, end),) = _gitleaks.merge_spans(list(rules.spans(text)))
    assert text[start:end] == "Zx81Qm2Lp0Vb7Ty4"
    # The global allowlist: template placeholders are not secrets.
    assert list(rules.spans("password = ${DB_PASSWORD}")) == []


def test_a_selector_or_toleration_key_in_a_custom_resource_is_a_label_key_not_a_secret() -> None:
    """``{key, operator, values}`` is Kubernetes' selector requirement (and a toleration's shape):
    its ``key`` names a label or a taint (``kubernetes.io/os``), evidence the LLM needs."""
    term = {"key": "node-role.kubernetes.io/worker", "operator": "In", "values": ["true"]}
    obj = {
        "apiVersion": "local.storage.openshift.io/v1alpha1",
        "kind": "LocalVolumeSet",
        "metadata": {"name": "disks", "namespace": "storage"},
        "spec": {
            "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [term]}]},
            "tolerations": [{"key": "local-storage", "operator": "Exists", "effect": "NoSchedule"}],
            "auth": {"key": "s3cr3t-value"},
        },
    }
    out = redact.redact_custom(obj)["spec"]
    assert out["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"] == [term]
    assert out["tolerations"][0]["key"] == "local-storage"
    assert out["auth"] == {"key": redact.REDACTED}


def test_settings_about_a_secret_are_kept_where_the_secret_itself_would_not_be() -> None:
    """cert-manager's ``privateKey`` holds how the key is made (``encoding: PKCS1``, the
    algorithm, the size), not a key; ``credentialIDs`` (``IDs`` one word) lists identifiers."""
    obj = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "api-tls", "namespace": "shop"},
        "spec": {
            "secretName": "api-tls",
            "privateKey": {"algorithm": "RSA", "encoding": "PKCS1", "size": 2048, "password": "hunter2"},
        },
        "status": {"ephemeralCredentialIDs": ["awx-17"]},
    }
    out = redact.redact_custom(obj)
    assert out["spec"]["privateKey"] == {
        "algorithm": "RSA",
        "encoding": "PKCS1",
        "size": 2048,
        "password": redact.REDACTED,
    }
    assert out["status"]["ephemeralCredentialIDs"] == ["awx-17"]
