"""TLS for the servers that take a bearer token (the Alertmanager intake, ``aianalysis mcp``): the
certificate and key files their settings name, read once when the server starts."""

from __future__ import annotations

import ssl

from aianalysis import errors


def server_tls(*, cert_file: str, key_file: str, what: str) -> ssl.SSLContext:
    """A server context (TLS 1.2 or newer) for the PEM certificate chain and key; a file that cannot
    be read or does not fit is a :class:`errors.ConfigError` naming it."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(certfile=cert_file, keyfile=key_file)
    except (OSError, ssl.SSLError) as exc:
        raise errors.ConfigError(
            f"{what}: cannot serve TLS with certificate {cert_file} and key {key_file}: {exc}"
        ) from None
    return context
