"""Redaction of secret-looking values before cluster data reaches the LLM (and the provider's logs).

Applied by the tool box to every object whatever the reader returned, so a new reader cannot
forget it. Over-redaction is the accepted failure mode: an env var called ``MONKEY_COUNT`` loses
its value, a password never leaks. What is covered:
- container ``env`` entries (containers, initContainers, ephemeralContainers, at any depth: Pods,
  pod templates, CronJob job templates, custom resources) whose NAME contains KEY, TOKEN,
  PASSWORD, PASSWD, PASSPHRASE, SECRET, CREDENTIAL or PRIVATE (any case);
- ``user:password@`` in URLs and ``name=value`` / ``name: value`` pairs with such names inside any
  free text we pass on (env values, command/args, annotations, ConfigMap values, logs, events);
- ConfigMap ``data`` entries with such key names; ``binaryData`` replaced by its size;
- ``data``/``stringData`` of a Secret, and ``stringData`` of anything, should one ever get here;
- the ``kubectl.kubernetes.io/last-applied-configuration`` annotation (a full copy of the applied
  manifest, env values included) and ``managedFields`` (noise).
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[REDACTED]"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

_WORDS = r"key|token|password|passwd|passphrase|secret|credential|private"
SECRET_NAME = re.compile(_WORDS, re.IGNORECASE)
# Linear time on any input (cluster text is attacker-controlled): every pattern starts only at a
# word boundary and its variable-length parts are possessive, so nothing backtracks quadratically.
_PAIR = re.compile(r"""(?<![\w.-])(?P<name>[\w.-]++)(?P<sep>["']?[:=]\s*+["']?)(?P<value>[^\s"',;&]++)""")
_URL_CREDENTIALS = re.compile(
    r"(?<![a-z0-9+.-])(?P<scheme>[a-z][a-z0-9+.-]*+://)(?P<user>[^/\s:@]++):(?P<password>[^/\s@]++)@", re.I
)
_BEARER = re.compile(r"\b(?P<kind>bearer|basic)\s++[A-Za-z0-9._~+/=-]{8,}+", re.IGNORECASE)
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def is_secret_name(name: str) -> bool:
    return SECRET_NAME.search(name) is not None


def redact_text(text: str) -> str:
    """Free text with credentials in URLs, auth headers and ``secret-name=value`` pairs hidden."""
    text = _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:{REDACTED}@", text)
    text = _BEARER.sub(lambda m: f"{m['kind']} {REDACTED}", text)
    return _PAIR.sub(_pair, text)


def _pair(match: re.Match[str]) -> str:
    if not is_secret_name(match["name"]):
        return match[0]
    return f"{match['name']}{match['sep']}{REDACTED}"


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
        if any(isinstance(copy.get(name), list) for name in _CONTAINER_LISTS):
            for name in _CONTAINER_LISTS:
                for container in copy.get(name) or ():
                    if isinstance(container, dict):
                        _container(container)
        return copy
    if isinstance(node, list):
        return [_walk(item) for item in node]
    return node


def _container(container: dict[str, Any]) -> None:
    for entry in container.get("env") or ():
        if isinstance(entry, dict) and isinstance(entry.get("value"), str):
            name = str(entry.get("name", ""))
            entry["value"] = REDACTED if is_secret_name(name) else redact_text(entry["value"])
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


# Keys that name a secret rather than hold one (``secretName``, ``tokenSecretRef``): kept, they
# tell the LLM which Secret is missing without exposing anything.
_REFERENCE_KEY = re.compile(r"(name|ref|namespace|keyref|selector)$", re.IGNORECASE)


def redact_custom(obj: dict[str, Any]) -> dict[str, Any]:
    """A custom resource redacted like any object, plus every scalar value (or list of scalars)
    under a secret-looking key anywhere in it (``spec.auth.password``, ``privateKeyPEM``...).
    Custom kinds have no schema we know, so the key name is all there is to go by."""
    out = redact_object(obj)
    for key in ("spec", "status", "data"):
        if key in out:
            out[key] = _secret_keys(out[key])
    return out


def _secret_keys(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: REDACTED
            if _scalar(value) and is_secret_name(str(key)) and not _REFERENCE_KEY.search(str(key))
            else _secret_keys(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_secret_keys(item) for item in node]
    if isinstance(node, str):
        return redact_text(node)
    return node


def _scalar(value: Any) -> bool:
    if isinstance(value, list):
        return all(not isinstance(item, (dict, list)) for item in value)
    return not isinstance(value, dict)
