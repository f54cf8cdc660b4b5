"""Redaction of secrets before cluster data reaches the LLM (and the provider's logs).

Applied by the tool box to every object whatever the reader returned, so a new reader cannot
forget it. Over-redaction is the accepted failure mode (an env var called ``API_KEY_ROTATION_DAYS``
may lose its value); the corpus test measures how often it happens on ordinary manifests. Covered:

- **by name** (``is_secret_name``: ``PASSWORD``, ``MYSQL_PWD``, ``DB_PASS``, ``REDIS_AUTH``,
  ``GH_CREDS``, ``postgresPassword``, ``x-api-key``...; ``secretName``, ``TOKEN_TTL``, ``keyRef``
  kept): any ``{name, value}`` entry at any depth (container ``env``, Argo CD / Argo Workflows
  parameter lists, HTTP headers of probes), ConfigMap ``data`` keys, annotation keys, and in a
  custom resource every value under such a key, nested ones included;
- **in free text** (``_text``: env values, command/args, annotations, ConfigMap values, custom
  resources' strings, logs, events, Prometheus answers): ``name: value`` pairs on one line, YAML
  blocks under a secret key, credentials in URLs, auth headers, PEM private keys, and every shape
  of gitleaks' rule set (``_gitleaks``: tokens, keys, webhooks, JWTs... by their shape alone);
- ``data``/``stringData`` of a Secret and ``stringData`` of anything, should one ever get here;
  ConfigMap ``binaryData`` replaced by its size;
- the ``kubectl.kubernetes.io/last-applied-configuration`` annotation (a full copy of the applied
  manifest, env values included) and ``managedFields`` (noise).

Never redacted, because they are evidence (and hold no secret): digests, uids, resourceVersions,
image references, container ids.
"""

from __future__ import annotations

from typing import Any

from aianalysis.analysis.redact import _text
from aianalysis.analysis.redact._text import REDACTED, SECRET_WORDS, is_secret_name, redact_text

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def redact_object(obj: dict[str, Any]) -> dict[str, Any]:
    """A redacted deep copy of one Kubernetes object (the input is not modified)."""
    out = _walk(obj)
    assert isinstance(out, dict)
    _metadata(out)
    kind = out.get("kind")
    if kind == "Secret":
        for field in ("data", "stringData"):
            if isinstance(out.get(field), dict):
                out[field] = dict.fromkeys(out[field], REDACTED)
    elif kind == "ConfigMap":
        _config_map(out)
    if isinstance(out.get("stringData"), dict):
        out["stringData"] = dict.fromkeys(out["stringData"], REDACTED)
    return out


def _walk(node: Any) -> Any:
    if isinstance(node, dict):
        copy = {key: _walk(value) for key, value in node.items()}
        if isinstance(copy.get("name"), str) and "value" in copy:
            _named_value(copy)
        if any(isinstance(copy.get(name), list) for name in _CONTAINER_LISTS):
            for name in _CONTAINER_LISTS:
                for container in copy.get(name) or ():
                    if isinstance(container, dict):
                        _container(container)
        return copy
    if isinstance(node, list):
        return [_walk(item) for item in node]
    return node


def _named_value(entry: dict[str, Any]) -> None:
    """``{name, value}`` anywhere: an env var, an Argo CD Helm parameter, an Argo Workflows
    parameter, a probe's HTTP header. A value under a secret name goes, any other is free text."""
    value = entry["value"]
    if is_secret_name(entry["name"]) and value not in (None, ""):
        entry["value"] = REDACTED
    elif isinstance(value, str):
        entry["value"] = redact_text(value)


def _container(container: dict[str, Any]) -> None:
    for field in ("command", "args"):
        values = container.get(field)
        if isinstance(values, list):
            container[field] = [redact_text(v) if isinstance(v, str) else v for v in values]


def _metadata(obj: dict[str, Any]) -> None:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return
    metadata.pop("managedFields", None)
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict):
        if LAST_APPLIED in annotations:
            annotations[LAST_APPLIED] = "[omitted: copy of the applied manifest]"
        for key, value in annotations.items():
            if isinstance(value, str) and key != LAST_APPLIED:
                annotations[key] = REDACTED if is_secret_name(key) else redact_text(value)


def _config_map(obj: dict[str, Any]) -> None:
    data = obj.get("data")
    if isinstance(data, dict):
        obj["data"] = {
            key: REDACTED if is_secret_name(key) else redact_text(str(value)) for key, value in data.items()
        }
    binary = obj.get("binaryData")
    if isinstance(binary, dict):
        obj["binaryData"] = {
            key: f"[binary, {len(str(value))} base64 characters]" for key, value in binary.items()
        }


def redact_custom(obj: dict[str, Any]) -> dict[str, Any]:
    """A custom resource redacted like any object, plus every value under a key naming a secret
    anywhere in it, nested ones included (``spec.auth.password``, ``spec.credentials.{user,
    value}``, ``privateKeyPEM``...), and every string as free text. Custom kinds have no schema we
    know, so the key name is all there is to go by; a key naming a reference (``secretName``,
    ``passwordSecretRef``) is kept, it tells which Secret is missing without exposing anything."""
    out = redact_object(obj)
    for key in ("spec", "status", "data"):
        if key in out:
            out[key] = _secret_keys(out[key])
    return out


def _secret_keys(node: Any) -> Any:
    if isinstance(node, dict):
        # {key, operator, values}: a selector requirement or a toleration; its key names a label/taint
        selector = "operator" in node and isinstance(node.get("key"), str)
        return {
            key: _masked(value)
            if is_secret_name(str(key)) and not (selector and key == "key")
            else _secret_keys(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_secret_keys(item) for item in node]
    if isinstance(node, str):
        return redact_text(node)
    return node


def _masked(node: Any) -> Any:
    """Every leaf value replaced, the shape kept (the LLM still sees which fields are set); a
    reference inside (``passwordSecretRef: {name: creds}``) is kept as references are."""
    if isinstance(node, dict):
        return {
            key: _secret_keys(value) if _text.names_a_reference(str(key)) else _masked(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_masked(item) for item in node]
    return node if node in (None, "", True, False) else REDACTED


__all__ = [
    "LAST_APPLIED",
    "REDACTED",
    "SECRET_WORDS",
    "is_secret_name",
    "redact_custom",
    "redact_object",
    "redact_text",
]
