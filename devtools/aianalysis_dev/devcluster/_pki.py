"""A certificate authority and the certificates it signs, made with the openssl command (EC P-256,
valid for two days: a dev cluster lives minutes)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from aianalysis import errors

Usage = Literal["client", "server", "client+server"]
_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"]
_EXTENDED_USAGE = {"client": "clientAuth", "server": "serverAuth", "client+server": "serverAuth,clientAuth"}


def openssl() -> str:
    """The openssl command, which makes the dev cluster's keys and certificates."""
    found = shutil.which("openssl")
    if found is None:
        raise errors.ConfigError("openssl is needed to create the dev cluster's keys; install it")
    return found


def make_ca(directory: Path, *, stem: str, name: str) -> tuple[Path, Path]:
    """``stem.crt`` and ``stem.key`` in ``directory``: a self-signed CA called ``name``."""
    cert, key = directory / f"{stem}.crt", directory / f"{stem}.key"
    _run([openssl(), "req", "-x509", *_KEY, "-keyout", str(key), "-out", str(cert), "-subj", f"/CN={name}"])
    return cert, key


def issue(
    directory: Path,
    *,
    ca: str,
    name: str,
    groups: Sequence[str] = (),
    usage: Usage = "client",
    ips: Sequence[str] = (),
    dns: Sequence[str] = (),
    stem: str | None = None,
) -> tuple[Path, Path]:
    """A certificate and key for ``name`` (CN) in ``groups`` (O) signed by the CA ``directory/ca.*``
    (:func:`make_ca`), written to ``directory`` as ``stem.crt`` and ``stem.key`` (default: from
    ``name``); Kubernetes reads a client certificate's CN as the user and its Os as the groups."""
    stem_path = directory / re.sub(r"[^A-Za-z0-9_.-]", "_", stem or name)
    cert, key = stem_path.with_suffix(".crt"), stem_path.with_suffix(".key")
    subject = f"/CN={name}" + "".join(f"/O={group}" for group in groups)
    extensions = [
        "basicConstraints=critical,CA:FALSE",
        "keyUsage=critical,digitalSignature",
        f"extendedKeyUsage={_EXTENDED_USAGE[usage]}",
    ]
    if alt_names := [f"IP:{ip}" for ip in ips] + [f"DNS:{host}" for host in dns]:
        extensions.append("subjectAltName=" + ",".join(alt_names))
    _run([
        openssl(), "req", "-x509", *_KEY, "-keyout", str(key), "-out", str(cert), "-subj", subject,
        "-CA", str(directory / f"{ca}.crt"), "-CAkey", str(directory / f"{ca}.key"),
        *[arg for extension in extensions for arg in ("-addext", extension)],
    ])  # fmt: skip
    return cert, key


def _run(argv: list[str]) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise errors.ConfigError(f"openssl failed ({result.returncode}): {result.stderr.strip()}")
