"""OCI images without a registry or a container engine: deterministic layers, an image-layout tar.

``ctr images import`` (and so the node's containerd) reads the tar :func:`write_image` writes: an
``oci-layout`` file, ``index.json`` naming the image (annotation ``io.containerd.image.name``) and
``blobs/sha256/`` holding the manifest, the config and the layers. Layers are plain tars
(``application/vnd.oci.image.layer.v1.tar``: their digest is their diff id) whose entries are sorted,
owned by numbers, and dated :data:`EPOCH`, so the same files always give the same digests.

    layers = [oci.tree_layer(rootfs, work / "base.tar"), oci.files_layer({...}, work / "app.tar")]
    digest = oci.write_image(out, name="aianalysis.local/x:1", layers=layers, config=oci.Config(...))

:func:`read_image` checks a layout the way a runtime would (index → manifest → config and layers,
each by digest and size); :func:`unpack` applies its layers to a directory.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import stat
import subprocess
import tarfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import IO, Any

EPOCH = 1
"""The modification time of every entry of every layer (and the config's ``created``): the digest of
a layer depends on its files, never on when they were built. (1, not 0: some tools read 0 as
"unknown".)"""
CREATED = "1970-01-01T00:00:01Z"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BUSYBOX_REF = "aianalysis.local/busybox:1"
NAME_ANNOTATION = "io.containerd.image.name"
REF_ANNOTATION = "org.opencontainers.image.ref.name"
LAYOUT_VERSION = "1.0.0"
INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar"
_CHUNK = 1 << 20


class OCIError(ValueError):
    """An image layout that is not what the OCI image spec describes, or input we cannot write."""


ImageError = OCIError


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config:
    """The runtime part of an image config (the fields a Dockerfile's instructions set)."""

    entrypoint: Sequence[str] = ()
    cmd: Sequence[str] = ()
    user: str = ""
    working_dir: str = ""
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    exposed_ports: Sequence[str] = ()
    """``"8080/tcp"``; a bare number means TCP."""
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.user:
            out["User"] = self.user
        if self.env:
            out["Env"] = [f"{key}={value}" for key, value in self.env.items()]
        if self.entrypoint:
            out["Entrypoint"] = list(self.entrypoint)
        if self.cmd:
            out["Cmd"] = list(self.cmd)
        if self.working_dir:
            out["WorkingDir"] = self.working_dir
        if self.exposed_ports:
            out["ExposedPorts"] = {_port(p): {} for p in self.exposed_ports}
        if self.labels:
            out["Labels"] = dict(self.labels)
        return out


@dataclasses.dataclass(frozen=True, kw_only=True)
class Blob:
    """Content-addressed bytes kept in a file (layers are too large to hold in memory)."""

    path: Path
    digest: str
    size: int
    media_type: str

    def descriptor(self) -> dict[str, Any]:
        return {"mediaType": self.media_type, "digest": self.digest, "size": self.size}


# ---- what goes into a layer ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class File:
    """A regular file of a :func:`files_layer`: bytes, or the content of a file on this machine."""

    content: bytes | Path
    mode: int = 0o644
    uid: int = 0
    gid: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class Dir:
    mode: int = 0o755
    uid: int = 0
    gid: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class Symlink:
    target: str


Entry = File | Dir | Symlink


def files_layer(files: Mapping[str, Entry], dest: Path) -> Blob:
    """A layer of exactly these paths (absolute paths in the image); parent directories that are not
    listed are added as root-owned ``0755``."""
    entries: dict[PurePosixPath, Entry] = {}
    for raw, entry in files.items():
        path = _image_path(raw)
        entries[path] = entry
        for parent in path.parents:
            if parent != PurePosixPath("."):
                entries.setdefault(parent, Dir())
    return _write_layer(dest, (_member(path, entries[path]) for path in sorted(entries, key=_order)))


def tree_layer(
    root: Path,
    dest: Path,
    *,
    include: Callable[[PurePosixPath], bool] = lambda _path: True,
    prefix: str = "",
) -> Blob:
    """A layer of the directory tree under ``root`` as it is on disk (modes, numeric owners, symlinks,
    hard links), each path placed under ``prefix`` in the image. ``include`` sees image-relative
    paths (``usr/bin/python3``); a directory it refuses is skipped with everything under it. Devices,
    FIFOs and sockets are refused: an image gets those from its runtime."""
    base = _image_path(prefix) if prefix.strip("/") else None
    return _write_layer(dest, _walk(root, base=base, include=include))


def _walk(
    root: Path, *, base: PurePosixPath | None, include: Callable[[PurePosixPath], bool]
) -> Iterator[tuple[tarfile.TarInfo, IO[bytes] | Path | None]]:
    if base is not None:
        for parent in reversed(base.parents):
            if parent != PurePosixPath("."):
                yield _member(parent, Dir())
        yield _info(root, base), None
    yield from _entries(root, image_dir=base, include=include, links={})


def _entries(
    directory: Path,
    *,
    image_dir: PurePosixPath | None,
    include: Callable[[PurePosixPath], bool],
    links: dict[tuple[int, int], str],
) -> Iterator[tuple[tarfile.TarInfo, IO[bytes] | Path | None]]:
    """Depth first in name order: each directory right before what it holds."""
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        image_path = image_dir / entry.name if image_dir else PurePosixPath(entry.name)
        if not include(image_path):
            continue
        info = _info(Path(entry.path), image_path)
        st = entry.stat(follow_symlinks=False)
        if info.isreg() and st.st_nlink > 1:
            first = links.setdefault((st.st_dev, st.st_ino), info.name)
            if first != info.name:
                info.type, info.linkname, info.size = tarfile.LNKTYPE, first, 0
        yield info, Path(entry.path) if info.isreg() else None
        if info.isdir():
            yield from _entries(Path(entry.path), image_dir=image_path, include=include, links=links)


def _info(path: Path, image_path: PurePosixPath) -> tarfile.TarInfo:
    st = path.lstat()
    info = tarfile.TarInfo(str(image_path))
    info.mode, info.uid, info.gid, info.mtime = stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, EPOCH
    if stat.S_ISREG(st.st_mode):
        info.size = st.st_size
    elif stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
    elif stat.S_ISLNK(st.st_mode):
        info.type, info.linkname = tarfile.SYMTYPE, os.readlink(path)
    else:
        raise OCIError(f"{path}: not a file, directory or symlink (devices come from the runtime)")
    return info


def _member(path: PurePosixPath, entry: Entry) -> tuple[tarfile.TarInfo, IO[bytes] | Path | None]:
    info = tarfile.TarInfo(str(path))
    info.mtime = EPOCH
    if isinstance(entry, Symlink):
        info.type, info.linkname, info.mode = tarfile.SYMTYPE, entry.target, 0o777
        return info, None
    info.mode, info.uid, info.gid = entry.mode, entry.uid, entry.gid
    if isinstance(entry, Dir):
        info.type = tarfile.DIRTYPE
        return info, None
    if isinstance(entry.content, Path):
        info.size = entry.content.stat().st_size
        return info, entry.content
    info.size = len(entry.content)
    return info, io.BytesIO(entry.content)


def _write_layer(dest: Path, members: Iterator[tuple[tarfile.TarInfo, IO[bytes] | Path | None]]) -> Blob:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _HashingFile(dest) as out, tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, content in members:
            info.uname = info.gname = ""  # numeric owners: the image's passwd is not this machine's
            if isinstance(content, Path):
                with content.open("rb") as source:
                    tar.addfile(info, source)
            else:
                tar.addfile(info, content)
    return Blob(path=dest, digest=out.digest, size=out.size, media_type=LAYER)


def _image_path(raw: str) -> PurePosixPath:
    path = PurePosixPath("/" + raw.lstrip("/"))
    if ".." in path.parts or path == PurePosixPath("/"):
        raise OCIError(f"not a path inside an image: {raw!r}")
    return path.relative_to("/")


def _order(path: PurePosixPath) -> tuple[str, ...]:
    return path.parts  # a directory sorts before everything inside it


class _HashingFile(io.RawIOBase):
    """A file that keeps the sha256 and length of what was written to it."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("wb")
        self._hash = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.size

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self._hash.update(view)
        self.size += len(view)
        return self._file.write(view)

    def close(self) -> None:
        self._file.close()
        super().close()

    @property
    def digest(self) -> str:
        return f"sha256:{self._hash.hexdigest()}"


# ---- the image -------------------------------------------------------------------------------------


def write_image(
    path: Path,
    *,
    name: str,
    layers: Sequence[Blob],
    config: Config,
    architecture: str = "amd64",
    os_name: str = "linux",
    history: Sequence[str] = (),
) -> str:
    """Writes the image as an OCI image-layout tar at ``path`` (atomically: a reader never sees half
    a file) and returns its manifest digest, the one ``name@sha256:…`` references. ``history`` is one
    ``created_by`` text per layer."""
    if history and len(history) != len(layers):
        raise OCIError("history needs one entry per layer")
    config_json = {
        "created": CREATED,
        "architecture": architecture,
        "os": os_name,
        "config": config.as_json(),
        "rootfs": {"type": "layers", "diff_ids": [layer.digest for layer in layers]},
        "history": [{"created": CREATED, "created_by": text} for text in history],
    }
    config_bytes = _canonical(config_json)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": {"mediaType": CONFIG, "digest": _digest(config_bytes), "size": len(config_bytes)},
        "layers": [layer.descriptor() for layer in layers],
    }
    manifest_bytes = _canonical(manifest)
    manifest_digest = _digest(manifest_bytes)
    index = {
        "schemaVersion": 2,
        "mediaType": INDEX,
        "manifests": [
            {
                "mediaType": MANIFEST,
                "digest": manifest_digest,
                "size": len(manifest_bytes),
                "platform": {"architecture": architecture, "os": os_name},
                "annotations": {NAME_ANNOTATION: name, REF_ANNOTATION: name},
            }
        ],
    }
    partial = path.with_name(f".{path.name}.partial")
    with tarfile.open(partial, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add_bytes(tar, "oci-layout", _canonical({"imageLayoutVersion": LAYOUT_VERSION}))
        _add_bytes(tar, "index.json", _canonical(index))
        _add_dir(tar, "blobs")
        _add_dir(tar, "blobs/sha256")
        written = set()
        blobs: list[tuple[str, bytes | Path]] = [
            (manifest_digest, manifest_bytes),
            (_digest(config_bytes), config_bytes),
            *((layer.digest, layer.path) for layer in layers),
        ]
        for digest, content in blobs:
            if digest in written:  # two identical layers are one blob
                continue
            written.add(digest)
            blob_name = "blobs/sha256/" + digest.removeprefix("sha256:")
            if isinstance(content, Path):
                info = _tar_info(blob_name, size=content.stat().st_size)
                with content.open("rb") as source:
                    tar.addfile(info, source)
            else:
                _add_bytes(tar, blob_name, content)
    partial.replace(path)
    return manifest_digest


def _add_bytes(tar: tarfile.TarFile, name: str, content: bytes) -> None:
    tar.addfile(_tar_info(name, size=len(content)), io.BytesIO(content))


def _add_dir(tar: tarfile.TarFile, name: str) -> None:
    info = _tar_info(name, size=0)
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    tar.addfile(info)


def _tar_info(name: str, *, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o644, EPOCH
    return info


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def _digest(content: bytes) -> str:
    return f"sha256:{hashlib.sha256(content).hexdigest()}"


def _port(port: str) -> str:
    return port if "/" in port else f"{port}/tcp"


# ---- reading one back ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class Image:
    """One image of a layout tar, every reference checked."""

    name: str
    digest: str
    """The manifest's digest."""
    index: dict[str, Any]
    manifest: dict[str, Any]
    config: dict[str, Any]
    layers: tuple[str, ...]
    """The layers' tar member names in the layout, bottom first."""

    @property
    def runtime(self) -> dict[str, Any]:
        """The ``config`` object of the image config: Entrypoint, User, Env, ..."""
        runtime: dict[str, Any] = self.config.get("config") or {}
        return runtime

    @property
    def env(self) -> dict[str, str]:
        return dict(item.split("=", 1) for item in self.runtime.get("Env") or [])

    @property
    def size(self) -> int:
        """What the layers hold, uncompressed (as ``docker images`` shows the size)."""
        return sum(layer["size"] for layer in self.manifest["layers"])


def read_image(path: Path) -> Image:
    """The one image of a layout tar written by :func:`write_image` (or any single-image layout with
    uncompressed layers), after checking each descriptor's digest and size against its blob."""
    with tarfile.open(path) as tar:
        names = set(tar.getnames())
        layout = json.loads(_read(tar, "oci-layout"))
        if layout.get("imageLayoutVersion") != LAYOUT_VERSION:
            raise OCIError(f"{path}: oci-layout says {layout}")
        index = json.loads(_read(tar, "index.json"))
        if index.get("schemaVersion") != 2 or len(index.get("manifests") or []) != 1:
            raise OCIError(f"{path}: index.json must list exactly one manifest")
        [entry] = index["manifests"]
        manifest = json.loads(_blob(tar, names, entry, MANIFEST))
        config = json.loads(_blob(tar, names, manifest["config"], CONFIG))
        layers = []
        for layer in manifest["layers"]:
            _blob(tar, names, layer, LAYER, keep=False)
            layers.append(_blob_name(layer["digest"]))
        if config["rootfs"]["diff_ids"] != [layer["digest"] for layer in manifest["layers"]]:
            raise OCIError(f"{path}: the config's diff_ids are not the layers (uncompressed) digests")
    annotations = entry.get("annotations") or {}
    return Image(
        name=annotations.get(NAME_ANNOTATION, ""),
        digest=entry["digest"],
        index=index,
        manifest=manifest,
        config=config,
        layers=tuple(layers),
    )


def unpack(path: Path, dest: Path) -> Image:
    """Applies the image's layers in order into ``dest`` (as root: owners and modes as in the image).
    Layers written here have no whiteouts; one that has some is refused rather than misapplied."""
    image = read_image(path)
    dest.mkdir(parents=True, exist_ok=True)
    dest.chmod(0o755)  # the image's "/", as a runtime makes it (a temporary directory is 0700)
    with tarfile.open(path) as outer:
        for name in image.layers:
            source = outer.extractfile(name)
            assert source is not None  # read_image checked it is a regular member
            with tarfile.open(fileobj=source, mode="r|") as layer:
                for member in layer:
                    if PurePosixPath(member.name).name.startswith(".wh."):
                        raise OCIError(f"{path}: whiteout {member.name} (not written by this module)")
                    target = dest / member.name
                    if target.is_symlink() or (target.exists() and not target.is_dir()):
                        target.unlink()
                    layer.extract(member, dest, numeric_owner=True, filter="fully_trusted")
    return image


def _read(tar: tarfile.TarFile, name: str) -> bytes:
    member = tar.extractfile(name)
    if member is None:
        raise OCIError(f"{name} is not a file in the layout")
    return member.read()


def _blob_name(digest: str) -> str:
    algorithm, _, hex_digest = digest.partition(":")
    if algorithm != "sha256" or len(hex_digest) != 64:
        raise OCIError(f"unsupported digest {digest!r}")
    return f"blobs/sha256/{hex_digest}"


def _blob(
    tar: tarfile.TarFile,
    names: set[str],
    descriptor: Mapping[str, Any],
    media_type: str,
    *,
    keep: bool = True,
) -> bytes:
    if descriptor.get("mediaType") != media_type:
        raise OCIError(
            f"{descriptor.get('digest')}: media type {descriptor.get('mediaType')}, want {media_type}"
        )
    name = _blob_name(descriptor["digest"])
    if name not in names:
        raise OCIError(f"{name} is referenced but missing from the layout")
    member = tar.extractfile(name)
    if member is None:
        raise OCIError(f"{name} is not a regular file")
    digest, size, kept = hashlib.sha256(), 0, bytearray()
    while chunk := member.read(_CHUNK):
        digest.update(chunk)
        size += len(chunk)
        if keep:
            kept += chunk
    if f"sha256:{digest.hexdigest()}" != descriptor["digest"] or size != descriptor["size"]:
        raise OCIError(f"{name}: content does not match its descriptor (digest or size)")
    return bytes(kept)


# ---- small images of the dev cluster's node --------------------------------------------------------


def image_names(path: Path) -> list[str]:
    """The ``io.containerd.image.name`` of each image in the layout tar ``path`` (what ``ctr images
    import`` will call them)."""
    try:
        with tarfile.open(path) as tar:
            index = json.loads(_read(tar, "index.json"))
    except (OSError, KeyError, tarfile.TarError, json.JSONDecodeError) as error:
        raise OCIError(f"{path} is not an OCI image-layout tar with an index.json: {error}") from error
    names = [(m.get("annotations") or {}).get(NAME_ANNOTATION) for m in index.get("manifests") or []]
    if not names or not all(isinstance(name, str) and name for name in names):
        raise OCIError(f"{path}: every index.json entry needs the annotation {NAME_ANNOTATION}")
    return [str(name) for name in names]


def image_digests(path: Path) -> list[str]:
    """The manifest digest (``sha256:…``) of each image in the layout tar ``path``, in the order of
    :func:`image_names`."""
    with tarfile.open(path) as tar:
        index = json.loads(_read(tar, "index.json"))
    return [str(m["digest"]) for m in index.get("manifests") or []]


def busybox_image(
    out: Path,
    *,
    busybox: Path,
    ref: str = BUSYBOX_REF,
    extra: Mapping[str, Path] | None = None,
    config: Config | None = None,
) -> Path:
    """A test image: a static busybox with every applet linked in /bin, /etc/passwd and /etc/group
    (root and nobody), /tmp, and ``extra`` files (path in the image → a file here, executable); its
    command is ``sh`` unless ``config`` says otherwise. (busybox's ``wget`` crashes without the NSS
    libraries; use ``nc``.)"""
    applets = subprocess.run(
        [str(busybox), "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    files: dict[str, Entry] = {
        "/bin/busybox": File(content=busybox, mode=0o755),
        **{f"/bin/{name}": Symlink(target="busybox") for name in applets if name != "busybox"},
        **{
            f"/{path.lstrip('/')}": File(content=source, mode=0o755) for path, source in (extra or {}).items()
        },
        "/etc/passwd": File(
            content=b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
        ),
        "/etc/group": File(content=b"root:x:0:\nnogroup:x:65534:\n"),
        "/tmp": Dir(mode=0o1777),  # noqa: S108 — the image's /tmp
        "/root": Dir(mode=0o700),
    }
    config = config or Config(cmd=["sh"], env={"PATH": DEFAULT_PATH})
    return _one_layer_image(out, ref=ref, files=files, config=config)


def single_binary_image(out: Path, *, binary: Path, ref: str) -> Path:
    """An image of one static binary at ``/<name>``, its entrypoint (the pause image)."""
    files: dict[str, Entry] = {f"/{binary.name}": File(content=binary, mode=0o755)}
    return _one_layer_image(out, ref=ref, files=files, config=Config(entrypoint=[f"/{binary.name}"]))


def _one_layer_image(out: Path, *, ref: str, files: Mapping[str, Entry], config: Config) -> Path:
    layer = files_layer(files, out.with_name(f".{out.name}.layer"))
    try:
        write_image(out, name=ref, layers=[layer], config=config)
    finally:
        layer.path.unlink()
    return out
