"""Debian packages without installing them on this machine: ``apt-get download`` + ``dpkg-deb -x``
(as ``hack/build-prometheus.sh`` does), and a Debian root filesystem made by the distribution's own
``debootstrap`` run from its unpacked package. Packages come from the mirror apt is configured with
here (read from its sources): no other host is named or contacted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aianalysis_dev.images import _cache

SUITE = "bookworm"
"""The release the host's apt sources name and the images are built from (Python 3.11, as the
Dockerfile's base)."""
SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))
LISTS = Path("/var/lib/apt/lists")


class DebianError(_cache.ImageBuildError):
    pass


def mirror() -> tuple[str, Path | None]:
    """The URI of the first source apt uses for the main archive of :data:`SUITE` and the keyring it
    trusts for it (``Signed-By``), from deb822 ``*.sources`` or one-line ``*.list`` files."""
    files: list[Path] = []
    for path in SOURCES:
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.suffix in (".sources", ".list")))
        elif path.is_file():
            files.append(path)
    for path in files:
        found = _deb822(path.read_text()) if path.suffix == ".sources" else _one_line(path.read_text())
        if found:
            return found
    raise DebianError(f"no apt source for the main archive of {SUITE} in {', '.join(map(str, SOURCES))}")


def _deb822(text: str) -> tuple[str, Path | None] | None:
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if (
            "deb" in fields.get("types", "").split()
            and SUITE in fields.get("suites", "").split()
            and "main" in fields.get("components", "").split()
            and fields.get("enabled", "yes").lower() != "no"
        ):
            keyring = fields.get("signed-by")
            return fields["uris"].split()[0], Path(keyring) if keyring and keyring.startswith("/") else None
    return None


def _one_line(text: str) -> tuple[str, Path | None] | None:
    for line in text.splitlines():
        match = re.match(
            r"^deb\s+(?:\[(?P<options>[^\]]*)\]\s+)?(?P<uri>\S+)\s+(?P<suite>\S+)\s+(?P<parts>.*)", line
        )
        if match and match["suite"] == SUITE and "main" in match["parts"].split():
            options = dict(o.split("=", 1) for o in (match["options"] or "").split() if "=" in o)
            keyring = options.get("signed-by")
            return match["uri"], Path(keyring) if keyring else None
    return None


def candidate_versions(packages: Sequence[str]) -> dict[str, str]:
    """The version apt would take of each package now (from its lists; nothing downloaded). Asking
    apt-cache takes seconds on a busy machine: the answer is kept until apt's lists change."""
    memo = _cache.root() / "apt-candidates.json"
    lists = sorted(LISTS.glob("*_Packages*"))
    stats = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in lists]
    signature = hashlib.sha256(repr(stats).encode())
    known: dict[str, Any] = json.loads(memo.read_text()) if memo.exists() else {}
    if known.get("lists") != signature.hexdigest():
        known = {"lists": signature.hexdigest(), "versions": {}}
    versions: dict[str, str] = known["versions"]
    if missing := [p for p in packages if p not in versions]:
        shown = _run(["apt-cache", "show", "--no-all-versions", *missing], what="apt-cache show")
        versions.update(re.findall(r"^Package: (\S+)\n(?:.+\n)*?Version: (\S+)", shown, flags=re.M))
        if unknown := sorted(set(missing) - versions.keys()):
            raise DebianError(f"apt knows no package {', '.join(unknown)} (run apt-get update?)")
        memo.parent.mkdir(parents=True, exist_ok=True)
        partial = memo.with_name(f".{memo.name}.{os.getpid()}")
        partial.write_text(json.dumps(known))
        partial.replace(memo)
    return {p: versions[p] for p in packages}


def download(packages: Sequence[str], dest: Path) -> dict[str, Path]:
    """The ``.deb`` files of ``packages`` (their candidate versions) in ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    dest.chmod(0o755)  # apt's download sandbox user must be able to write there
    argv = ["apt-get", "download", "-qq", *packages]
    if subprocess.run(argv, cwd=dest, capture_output=True, check=False).returncode != 0:
        _run(["apt-get", "update", "-qq"], what="apt-get update")  # a fresh machine may have no lists yet
        _run(argv, cwd=dest, what="apt-get download")
    debs = {}
    for name in packages:
        [deb] = dest.glob(f"{name}_*.deb")
        debs[name] = deb
    return debs


def unpack(deb: Path, dest: Path) -> None:
    _run(["dpkg-deb", "-x", str(deb), str(dest)], what=f"dpkg-deb -x {deb.name}")


def debootstrap(
    target: Path, *, include: Sequence[str], tools: Path, log: Path, variant: str = "minbase"
) -> None:
    """A Debian :data:`SUITE` root filesystem in ``target`` by the distribution's debootstrap (its
    package unpacked under ``tools``, not installed). Needs root: it unpacks packages owned by root
    and configures them in a chroot. Its ``/proc`` and ``/sys`` mounts live in a mount namespace of
    their own, so none outlives it, whatever happens."""
    if os.geteuid() != 0:
        raise DebianError("debootstrap needs root (it configures the packages in a chroot)")
    script = tools / "usr" / "sbin" / "debootstrap"
    if not script.exists():
        with tempfile.TemporaryDirectory() as work:
            unpack(download(["debootstrap"], Path(work))["debootstrap"], tools)
    uri, keyring = mirror()
    argv = [
        "unshare", "--mount", "--propagation", "private",
        str(script), f"--variant={variant}", f"--include={','.join(include)}",
        *([f"--keyring={keyring}"] if keyring else []), SUITE, str(target), uri,
    ]  # fmt: skip
    env = {**os.environ, "DEBOOTSTRAP_DIR": str(tools / "usr" / "share" / "debootstrap")}
    with log.open("wb") as sink:
        done = subprocess.run(argv, env=env, stdout=sink, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise DebianError(f"debootstrap failed ({done.returncode}); {log}:\n" + "\n".join(tail))


def trim(rootfs: Path) -> None:
    """What an image never needs: package lists and downloaded packages, documentation (each
    package's copyright file stays), manual pages, translations, logs, backup copies of dpkg and
    debconf state, byte code compiled by the packages' scripts (compiled again, reproducibly), and
    this machine's name and resolver (the runtime provides both)."""
    for pattern in (
        "var/cache/apt/*", "var/lib/apt/lists/*", "usr/share/man/*", "usr/share/info/*",
        "usr/share/lintian", "var/log/*", "var/cache/ldconfig/aux-cache", "var/cache/debconf/*-old",
        "var/lib/dpkg/*-old", "dev/*", "run/*", "tmp/*", "var/tmp/*",
    ):  # fmt: skip
        for path in rootfs.glob(pattern):
            _remove(path)
    for path in (rootfs / "usr/share/locale").iterdir():
        if path.is_dir():
            _remove(path)
    for path in sorted((rootfs / "usr/share/doc").rglob("*"), reverse=True):
        if path.is_dir() and not path.is_symlink():
            if not any(path.iterdir()):
                path.rmdir()
        elif path.name != "copyright":
            path.unlink()
    for path in list(rootfs.rglob("__pycache__")):
        _remove(path)
    for name in ("hostname", "resolv.conf"):
        (rootfs / "etc" / name).write_text("")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _run(argv: list[str], *, what: str, cwd: Path | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise DebianError(f"{what} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout
