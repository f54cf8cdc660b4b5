"""OCI image layouts without Docker or a registry, written with the standard library.

An image here is one tar file in the OCI image-layout format (``oci-layout``, ``index.json``,
``blobs/sha256/…``) whose index entry carries the annotation ``io.containerd.image.name`` — the
reference under which ``ctr images import`` (and so ``NodeCluster.import_image``) stores it. Layers
are uncompressed tars (``application/vnd.oci.image.layer.v1.tar``: the digest is the diff ID), so
nothing is compressed only to be decompressed again by the import. Every tar is written
deterministically (sorted, fixed timestamps, numeric owners): the same inputs give the same digest.

The dev cluster's pause and busybox test images are built here; the operator's and the workflow
images use the same functions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import subprocess
import tarfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

REF_ANNOTATION = "io.containerd.image.name"
LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BUSYBOX_REF = "aianalysis.local/busybox:1"
EPOCH = 1  # mtime of every entry (0 reads as "unknown" to some tools)
_CHUNK = 1 << 20


class ImageError(ValueError):
    """A file is not an OCI image-layout tar we can use."""


@dataclasses.dataclass(frozen=True)
class Config:
    """What the runtime reads of an image's config."""

    entrypoint: Sequence[str] = ()
    cmd: Sequence[str] = ()
    env: Sequence[str] = (DEFAULT_PATH,)
    user: str = ""
    working_dir: str = ""
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        fields = {
            "Entrypoint": list(self.entrypoint),
            "Cmd": list(self.cmd),
            "Env": list(self.env),
            "User": self.user,
            "WorkingDir": self.working_dir,
            "Labels": dict(self.labels),
        }
        return {name: value for name, value in fields.items() if value}


def files_layer(
    out: Path,
    files: Mapping[str, Path | bytes],
    *,
    symlinks: Mapping[str, str] | None = None,
    directories: Mapping[str, int] | None = None,
    mode: int = 0o755,
) -> Path:
    """A layer tar at ``out`` holding ``files`` (path in the image → a file on disk or the bytes,
    all with ``mode``), ``symlinks`` (path → target) and ``directories`` (path → mode); the parent
    directories of every entry are added (0755)."""
    entries: dict[str, tarfile.TarInfo] = {}
    contents: dict[str, Path | bytes] = {}
    for path, mode_ in (directories or {}).items():
        entries[_clean(path)] = _info(_clean(path), tarfile.DIRTYPE, mode=mode_)
    for path, target in (symlinks or {}).items():
        entries[_clean(path)] = _info(_clean(path), tarfile.SYMTYPE, mode=0o777, linkname=target)
    for path, content in files.items():
        size = len(content) if isinstance(content, bytes) else content.stat().st_size
        entries[_clean(path)] = _info(_clean(path), tarfile.REGTYPE, mode=mode, size=size)
        contents[_clean(path)] = content
    for name in list(entries):
        for parent in _parents(name):
            entries.setdefault(parent, _info(parent, tarfile.DIRTYPE, mode=0o755))
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(entries):
            data = contents.get(name)
            if data is None:
                tar.addfile(entries[name])
            elif isinstance(data, bytes):
                tar.addfile(entries[name], io.BytesIO(data))
            else:
                with data.open("rb") as source:
                    tar.addfile(entries[name], source)
    return out


def directory_layer(root: Path, out: Path) -> Path:
    """A layer tar at ``out`` of everything under ``root`` (a root filesystem), deterministic: sorted,
    every mtime ``EPOCH``, owners numeric as they are on disk."""

    def normalise(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime, info.uname, info.gname = EPOCH, "", ""
        return info

    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for child in sorted(root.iterdir()):
            tar.add(child, arcname=child.name, filter=normalise)
    return out


def write_image(
    out: Path, *, ref: str, layers: Sequence[Path], config: Config, architecture: str = "amd64"
) -> Path:
    """The OCI image-layout tar ``out`` of ``layers`` (uncompressed layer tars, lowest first) and
    ``config``, named ``ref`` for ``ctr images import``."""
    layer_descriptors = [_descriptor(LAYER_MEDIA_TYPE, *_digest_file(layer)) for layer in layers]
    image_config = {
        "architecture": architecture,
        "os": "linux",
        "config": config.as_json(),
        "rootfs": {"type": "layers", "diff_ids": [d["digest"] for d in layer_descriptors]},
        "history": [{"created_by": "aianalysis_dev.oci"} for _ in layers],
    }
    config_blob = _json(image_config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": _descriptor(CONFIG_MEDIA_TYPE, *_digest_bytes(config_blob)),
        "layers": layer_descriptors,
    }
    manifest_blob = _json(manifest)
    index = {
        "schemaVersion": 2,
        "mediaType": INDEX_MEDIA_TYPE,
        "manifests": [
            {
                **_descriptor(MANIFEST_MEDIA_TYPE, *_digest_bytes(manifest_blob)),
                "platform": {"architecture": architecture, "os": "linux"},
                "annotations": {REF_ANNOTATION: ref, "org.opencontainers.image.ref.name": _tag(ref)},
            }
        ],
    }
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        _add_bytes(tar, "oci-layout", _json({"imageLayoutVersion": "1.0.0"}))
        _add_bytes(tar, "index.json", _json(index))
        tar.addfile(_info("blobs", tarfile.DIRTYPE, mode=0o755))
        tar.addfile(_info("blobs/sha256", tarfile.DIRTYPE, mode=0o755))
        written: set[str] = set()
        for blob in (config_blob, manifest_blob):
            _add_bytes(tar, _blob_path(_digest_bytes(blob)[0]), blob)
        for layer, descriptor in zip(layers, layer_descriptors, strict=True):
            if descriptor["digest"] in written:
                continue
            written.add(descriptor["digest"])
            with layer.open("rb") as source:
                info = _info(
                    _blob_path(descriptor["digest"]), tarfile.REGTYPE, mode=0o644, size=descriptor["size"]
                )
                tar.addfile(info, source)
    return out


def image_names(path: Path) -> list[str]:
    """The ``io.containerd.image.name`` of each image in the OCI layout tar ``path``."""
    try:
        with tarfile.open(path) as tar:
            member = tar.extractfile("index.json")
            index = json.load(_required(member, path))
    except (OSError, KeyError, tarfile.TarError, json.JSONDecodeError) as error:
        raise ImageError(f"{path} is not an OCI image-layout tar with an index.json: {error}") from error
    names = [m.get("annotations", {}).get(REF_ANNOTATION) for m in index.get("manifests", [])]
    if not names or not all(isinstance(name, str) and name for name in names):
        raise ImageError(f"{path}: every index.json entry needs the annotation {REF_ANNOTATION}")
    return [str(name) for name in names]


def busybox_image(
    out: Path, *, busybox: Path, ref: str = BUSYBOX_REF, extra: Mapping[str, Path] | None = None
) -> Path:
    """A test image: a static busybox with every applet linked in /bin, /etc/passwd and /etc/group
    (root and nobody), /tmp, and ``extra`` files (path in the image → file, executable); the command
    is ``sh``. busybox's ``wget`` crashes without the NSS libraries; use ``nc``."""
    applets = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, check=True).stdout
    links = {f"bin/{name}": "busybox" for name in applets.split() if name != "busybox"}
    accounts = {
        "etc/passwd": b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n",
        "etc/group": b"root:x:0:\nnogroup:x:65534:\n",
    }
    layer = files_layer(
        out.with_suffix(".layer.tar"),
        {"bin/busybox": busybox, **(extra or {})},
        symlinks=links,
        directories={"tmp": 0o1777, "root": 0o700},
    )
    etc = files_layer(out.with_suffix(".etc.tar"), accounts, mode=0o644)
    try:
        return write_image(out, ref=ref, layers=[layer, etc], config=Config(cmd=["sh"]))
    finally:
        layer.unlink()
        etc.unlink()


def single_binary_image(out: Path, *, binary: Path, ref: str) -> Path:
    """An image of one static binary at ``/<name>``, which is its entrypoint (the pause image)."""
    layer = files_layer(out.with_suffix(".layer.tar"), {binary.name: binary})
    try:
        return write_image(out, ref=ref, layers=[layer], config=Config(entrypoint=[f"/{binary.name}"]))
    finally:
        layer.unlink()


# --- helpers -------------------------------------------------------------------------------------------


def _clean(path: str) -> str:
    cleaned = path.strip("/")
    if not cleaned or ".." in cleaned.split("/"):
        raise ImageError(f"not a path inside an image: {path!r}")
    return cleaned


def _parents(name: str) -> Iterable[str]:
    parts = name.split("/")[:-1]
    return ("/".join(parts[: i + 1]) for i in range(len(parts)))


def _info(name: str, kind: bytes, *, mode: int, size: int = 0, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.linkname, info.mtime = kind, mode, size, linkname, EPOCH
    return info


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    tar.addfile(_info(name, tarfile.REGTYPE, mode=0o644, size=len(data)), io.BytesIO(data))


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def _digest_bytes(data: bytes) -> tuple[str, int]:
    return f"sha256:{hashlib.sha256(data).hexdigest()}", len(data)


def _digest_file(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as source:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return f"sha256:{digest.hexdigest()}", size


def _descriptor(media_type: str, digest: str, size: int) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": digest, "size": size}


def _blob_path(digest: str) -> str:
    return "blobs/sha256/" + digest.removeprefix("sha256:")


def _tag(ref: str) -> str:
    last = ref.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else "latest"


def _required(member: IO[bytes] | None, path: Path) -> IO[bytes]:
    if member is None:
        raise ImageError(f"{path}: index.json is not a file")
    return member
