"""Secrets in free text (log lines, env values, ConfigMap values, annotations, events, Prometheus
answers), in two passes:

1. **Structure**: what a name says is secret. ``name: value`` / ``name=value`` / ``"name": "value"``
   / ``--name value`` pairs whose name names a secret (``is_secret_name``) lose their value, on one
   line — a YAML parent key never swallows the line under it; a YAML key naming a secret with no
   value on its line (a block: ``credentials:``, ``password: |``) loses every more-indented line
   under it; credentials in URLs (``scheme://user:pass@``, an empty user too), ``Bearer``/``Basic``
   headers and PEM private-key blocks (also cut off, also inside JSON strings) go.
2. **Shapes**: gitleaks' rule set (``_gitleaks``) for what has no telling name — a GitHub token in
   a log line, a Slack webhook, a JWT, an AWS key id, a Stripe key...

Every pattern here is linear on any input (cluster text is attacker-controlled): possessive
quantifiers, one line at a time, and RE2 for the rule set.
"""

from __future__ import annotations

import functools
import re

from aianalysis.analysis.redact import _gitleaks

REDACTED = "[REDACTED]"

#: Whole words (of a name split at ``_ . -`` and camelCase) that say the value is a secret.
SECRET_WORDS = frozenset(
    {
        "password", "passwords", "passwd", "pwd", "pass", "passphrase", "secret", "token", "key",
        "apikey", "credential", "credentials", "cred", "creds", "auth",
        "authorization", "private", "dsn", "cookie", "signature", "sig", "otp", "pin", "salt",
    }
)  # fmt: skip
#: Plurals that count or list rather than hold (``maxTokens``, ``BUDGET_TOKENS``, a ServiceAccount's
#: ``secrets`` references, a CRD's ``x-kubernetes-list-map-keys``).
_COUNTS = frozenset({"tokens", "keys", "secrets"})
#: Inside a word glued without separators (``authToken`` splits, ``AUTHTOKEN`` does not).
_GLUED = re.compile(
    r"passw|passphrase|secret|token|credential|apikey|privatekey|accesskey|authkey|signingkey"
)
#: A last word that says the value is about a secret, not the secret (``TOKEN_TTL``, ``secretName``,
#: ``keyRef``, ``PASSWORD_FILE``): its value is kept — it tells which Secret or file is missing.
QUALIFIERS = frozenset(
    {
        "name", "names", "ref", "refs", "keyref", "namespace", "selector", "id", "ids", "file", "path",
        "dir", "url", "urls", "uri", "endpoint", "ttl", "timeout", "expiry", "expiration", "expires",
        "rotation", "length", "size", "type", "algorithm", "alg", "header", "prefix", "alias", "enabled",
        "disabled", "required", "mode", "field", "format", "encoding", "version", "count", "policy",
        "provider", "issuer",
    }
)  # fmt: skip
# ``IDs``, ``URLs``: an acronym's plural is one word (``credentialIDs`` ends in ``ids``, not ``ds``).
_WORDS = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


@functools.lru_cache(maxsize=8192)
def is_secret_name(name: str) -> bool:
    """Whether a key or variable called ``name`` holds a secret (``MYSQL_PWD``, ``DB_PASS``,
    ``REDIS_AUTH``, ``GH_CREDS``, ``postgresPassword``, ``x-api-key``, ``AccountKey``)."""
    words = [w.lower() for w in _WORDS.findall(name[:200])]
    if not words or words[-1] in QUALIFIERS:
        return False
    return any(w not in _COUNTS and (w in SECRET_WORDS or _GLUED.search(w)) for w in words)


def names_a_reference(name: str) -> bool:
    """Whether ``name`` describes a secret rather than holding one (``secretName``, ``keyRef``)."""
    words = _WORDS.findall(name[:200])
    return bool(words) and words[-1].lower() in QUALIFIERS


# ``name<sep>value`` on one line; a quoted value runs to its closing quote. Not a Go type in a log
# line (``*v1.Secret: failed to list``).
_PAIR = re.compile(
    r"""(?<![\w.*-])(?P<name>[\w.-]++)(?P<sep>["']?[ \t]*+(?::=|=>|[:=])[ \t]*+)"""
    r"""(?:"(?P<dq>[^"\n]*+)"|'(?P<sq>[^'\n]*+)'|(?P<value>[^\s"',;&]++))"""
)
_FLAG = re.compile(r"(?<![\w-])--(?P<name>[\w.-]++)[ \t]++(?P<value>[^\s-][^\s]*+)")
_URL_CREDENTIALS = re.compile(
    r"(?<![a-z0-9+.-])(?P<scheme>[a-z][a-z0-9+.-]*+://)(?P<user>[^/\s:@]*+):(?P<password>[^/\s@]++)@", re.I
)
_BEARER = re.compile(r"\b(?P<kind>bearer|basic)\s++[A-Za-z0-9._~+/=-]{8,}+", re.IGNORECASE)
# Up to its END line, or to the end of the text when it was cut (a capped log, a fenced value).
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY[ A-Z]{0,20}-----"
    r"(?:.*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY[ A-Z]{0,20}-----|.*)",
    re.DOTALL,
)
# A YAML key on its own line (block mapping or block scalar): ``  credentials:``, ``password: |-``.
_BLOCK_KEY = re.compile(
    r"""^(?P<indent>[ \t]*+(?:-[ \t]++)?)["']?(?P<name>[\w.-]++)["']?"""
    r"""[ \t]*+:[ \t]*+(?:[|>][-+0-9]*+)?[ \t]*+$"""
)
_INDENT = re.compile(r"^[ \t]*+")


def redact_text(text: str) -> str:
    """``text`` with every secret found replaced by ``[REDACTED]`` (see the module)."""
    if not text:
        return text
    text = _PRIVATE_KEY.sub("[REDACTED private key]", text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:{REDACTED}@", text)
    text = _BEARER.sub(lambda m: f"{m['kind']} {REDACTED}", text)
    text = _FLAG.sub(_flag, text)
    text = _PAIR.sub(_pair, text)
    if "\n" in text:
        text = _blocks(text)
    return _shapes(text)


def _pair(match: re.Match[str]) -> str:
    if not is_secret_name(match["name"]):
        return match[0]
    if match["dq"] is not None:
        return f'{match["name"]}{match["sep"]}"{REDACTED}"'
    if match["sq"] is not None:
        return f"{match['name']}{match['sep']}'{REDACTED}'"
    return f"{match['name']}{match['sep']}{REDACTED}"


def _flag(match: re.Match[str]) -> str:
    return f"--{match['name']} {REDACTED}" if is_secret_name(match["name"]) else match[0]


def _blocks(text: str) -> str:
    """Every line more indented than a YAML key naming a secret that has no value on its line."""
    lines = text.split("\n")
    parent: int | None = None  # the indentation of the open secret block's key
    for i, line in enumerate(lines):
        indent = len(_INDENT.match(line)[0])  # type: ignore[index]
        if parent is not None:
            if not line.strip() or indent > parent:
                if line.strip() and REDACTED not in line:
                    lines[i] = line[:indent] + REDACTED
                continue
            parent = None
        key = _BLOCK_KEY.match(line)
        if key is not None and is_secret_name(key["name"]):
            parent = len(key["indent"])
    return "\n".join(lines)


def _shapes(text: str) -> str:
    spans = _gitleaks.merge_spans(list(_gitleaks.rules().spans(text)))
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], REDACTED]
        last = end
    parts.append(text[last:])
    return "".join(parts)
