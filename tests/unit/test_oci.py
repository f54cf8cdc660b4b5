"""The OCI image-layout writer (devtools/aianalysis_dev/oci.py): what a runtime checks when it
imports the tar (index → manifest → config and layers, by digest and size), what it unpacks, and that
the same files always give the same digests."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from aianalysis_dev import oci

NAME = "aianalysis.local/test:1"
CONFIG = oci.Config(
    entrypoint=["/app/run", "serve"],
    user="65532:65532",
    working_dir="/tmp",
    env={"PATH": "/app:/bin", "MODE": "a=b"},
    exposed_ports=["8080", "9090/udp"],
)


def tree(root: Path) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "tool").write_bytes(b"#!/bin/sh\necho hi\n")
    (root / "bin" / "tool").chmod(0o755)
    os.link(root / "bin" / "tool", root / "bin" / "alias")
    (root / "bin" / "sh").symlink_to("tool")
    (root / "tmp").mkdir()
    (root / "tmp").chmod(0o1777)
    (root / "skip").mkdir()
    (root / "skip" / "secret").write_text("not in the image")
    (root / "etc").mkdir()
    (root / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    if os.geteuid() == 0:
        os.chown(root / "etc" / "passwd", 1234, 5678)
    return root


def members(path: Path) -> list[tarfile.TarInfo]:
    with tarfile.open(path) as tar:
        return tar.getmembers()


def image_files(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def sha256(content: bytes) -> str:
    return "sha256:" + hashlib.sha256(content).hexdigest()


def test_tree_layer_keeps_modes_numeric_owners_links_and_nothing_of_when_it_was_built(tmp_path: Path) -> None:
    root = tree(tmp_path / "root")
    blob = oci.tree_layer(root, tmp_path / "layer.tar", include=lambda p: p.parts[0] != "skip")
    entries = {m.name: m for m in members(blob.path)}
    assert list(entries) == ["bin", "bin/alias", "bin/sh", "bin/tool", "etc", "etc/passwd", "tmp"]
    assert entries["bin/alias"].mode == entries["bin/tool"].mode == 0o755
    assert entries["bin/sh"].issym() and entries["bin/sh"].linkname == "tool"
    # one of the two names of the hard-linked file carries the bytes, the other links to it
    assert entries["bin/alias"].isreg() and entries["bin/tool"].islnk()
    assert entries["bin/tool"].linkname == "bin/alias"
    assert entries["tmp"].isdir() and entries["tmp"].mode == 0o1777
    assert {(m.mtime, m.uname, m.gname) for m in entries.values()} == {(oci.EPOCH, "", "")}
    if os.geteuid() == 0:
        assert (entries["etc/passwd"].uid, entries["etc/passwd"].gid) == (1234, 5678)
    assert blob.digest == sha256(blob.path.read_bytes()) and blob.size == blob.path.stat().st_size

    os.utime(root / "bin" / "tool", (1, 1))  # a rebuild: same files, other times
    again = oci.tree_layer(root, tmp_path / "again.tar", include=lambda p: p.parts[0] != "skip")
    assert again.digest == blob.digest
    (root / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/false\n")
    changed = oci.tree_layer(root, tmp_path / "changed.tar", include=lambda p: p.parts[0] != "skip")
    assert changed.digest != blob.digest


def test_tree_layer_under_a_prefix_adds_the_parent_directories(tmp_path: Path) -> None:
    root = tree(tmp_path / "root")
    blob = oci.tree_layer(root / "bin", tmp_path / "layer.tar", prefix="/opt/venv/bin")
    assert [m.name for m in members(blob.path)][:5] == [
        "opt", "opt/venv", "opt/venv/bin", "opt/venv/bin/alias", "opt/venv/bin/sh",
    ]  # fmt: skip


def test_tree_layer_refuses_what_a_runtime_provides(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    os.mkfifo(root / "pipe")
    with pytest.raises(oci.OCIError, match="not a file, directory or symlink"):
        oci.tree_layer(root, tmp_path / "layer.tar")


def test_files_layer_adds_parents_before_children_and_refuses_paths_outside_the_image(tmp_path: Path) -> None:
    source = tmp_path / "kubectl"
    source.write_bytes(b"\x7fELF")
    blob = oci.files_layer(
        {
            "/workflow/run.sh": oci.File(content=b"#!/bin/sh\n", mode=0o755),
            "/usr/local/bin/kubectl": oci.File(content=source, mode=0o755),
            "/bin/sh": oci.Symlink(target="busybox"),
            "/tmp": oci.Dir(mode=0o1777),
            "/home/user": oci.Dir(uid=65532, gid=65532),
        },
        tmp_path / "layer.tar",
    )
    entries = {m.name: m for m in members(blob.path)}
    assert list(entries) == [
        "bin", "bin/sh", "home", "home/user", "tmp", "usr", "usr/local", "usr/local/bin",
        "usr/local/bin/kubectl", "workflow", "workflow/run.sh",
    ]  # fmt: skip
    assert entries["home/user"].uid == 65532 and entries["usr"].mode == 0o755
    assert image_files(blob.path)["usr/local/bin/kubectl"] == b"\x7fELF"
    for bad in ("/", "/a/../../etc/passwd"):
        with pytest.raises(oci.OCIError, match="not a path inside an image"):
            oci.files_layer({bad: oci.File(content=b"")}, tmp_path / "bad.tar")


@pytest.fixture
def image(tmp_path: Path) -> tuple[Path, str, list[oci.Blob]]:
    base = oci.tree_layer(tree(tmp_path / "root"), tmp_path / "base.tar")
    app = oci.files_layer({"/app/run": oci.File(content=b"#!/bin/sh\n", mode=0o755)}, tmp_path / "app.tar")
    path = tmp_path / "image.tar"
    digest = oci.write_image(path, name=NAME, layers=[base, app], config=CONFIG, history=["base", "app"])
    return path, digest, [base, app]


def test_layout_is_what_the_oci_image_spec_describes(image: tuple[Path, str, list[oci.Blob]]) -> None:
    path, digest, layers = image
    files = image_files(path)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    for name, content in files.items():  # every blob is named by its own digest
        if name.startswith("blobs/"):
            assert name == "blobs/sha256/" + hashlib.sha256(content).hexdigest()
    index = json.loads(files["index.json"])
    assert index["schemaVersion"] == 2 and index["mediaType"] == oci.INDEX
    [entry] = index["manifests"]
    assert entry["digest"] == digest and entry["mediaType"] == oci.MANIFEST
    assert entry["platform"] == {"architecture": "amd64", "os": "linux"}
    assert entry["annotations"] == {
        "io.containerd.image.name": NAME,
        "org.opencontainers.image.ref.name": NAME,
    }
    manifest_bytes = files["blobs/sha256/" + digest.removeprefix("sha256:")]
    assert entry["size"] == len(manifest_bytes) and sha256(manifest_bytes) == digest
    manifest = json.loads(manifest_bytes)
    assert manifest["schemaVersion"] == 2 and manifest["mediaType"] == oci.MANIFEST
    assert manifest["layers"] == [
        {"mediaType": oci.LAYER, "digest": layer.digest, "size": layer.size} for layer in layers
    ]
    config_bytes = files["blobs/sha256/" + manifest["config"]["digest"].removeprefix("sha256:")]
    assert manifest["config"] == {
        "mediaType": oci.CONFIG,
        "digest": sha256(config_bytes),
        "size": len(config_bytes),
    }
    config = json.loads(config_bytes)
    assert (config["architecture"], config["os"]) == ("amd64", "linux")
    assert config["rootfs"] == {"type": "layers", "diff_ids": [layer.digest for layer in layers]}
    assert [h["created_by"] for h in config["history"]] == ["base", "app"]
    assert config["config"] == {
        "Entrypoint": ["/app/run", "serve"],
        "User": "65532:65532",
        "WorkingDir": "/tmp",
        "Env": ["PATH=/app:/bin", "MODE=a=b"],
        "ExposedPorts": {"8080/tcp": {}, "9090/udp": {}},
    }


def test_same_layers_and_config_give_the_same_bytes(
    image: tuple[Path, str, list[oci.Blob]], tmp_path: Path
) -> None:
    path, digest, layers = image
    again = tmp_path / "again.tar"
    assert oci.write_image(again, name=NAME, layers=layers, config=CONFIG, history=["base", "app"]) == digest
    assert again.read_bytes() == path.read_bytes()
    other = oci.write_image(tmp_path / "other.tar", name=NAME, layers=layers, config=oci.Config(user="0:0"))
    assert other != digest


def test_read_image_checks_every_reference(image: tuple[Path, str, list[oci.Blob]]) -> None:
    path, digest, layers = image
    read = oci.read_image(path)
    assert (read.name, read.digest) == (NAME, digest)
    assert read.runtime["Entrypoint"] == ["/app/run", "serve"]
    assert read.env == {"PATH": "/app:/bin", "MODE": "a=b"}
    assert read.size == sum(layer.size for layer in layers)


def rewrite(path: Path, change: dict[str, Any]) -> None:
    """The layout tar with some members replaced (bytes) or dropped (None)."""
    with tarfile.open(path) as tar:
        kept = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()]  # type: ignore[union-attr]
    with tarfile.open(path, "w") as tar:
        for member, content in kept:
            new = change.get(member.name, content)
            if member.name in change and new is None:
                continue
            if new is not None:
                member.size = len(new)
            tar.addfile(member, io.BytesIO(new) if new is not None else None)


def test_read_image_refuses_a_blob_that_is_missing_or_not_what_its_descriptor_says(
    image: tuple[Path, str, list[oci.Blob]],
) -> None:
    path, _, layers = image
    app = "blobs/sha256/" + layers[1].digest.removeprefix("sha256:")
    original = image_files(path)[app]
    rewrite(path, {app: original.replace(b"#!/bin/sh", b"#!/bin/xx")})  # same size, other bytes
    with pytest.raises(oci.OCIError, match="does not match its descriptor"):
        oci.read_image(path)
    rewrite(path, {app: None})
    with pytest.raises(oci.OCIError, match="missing from the layout"):
        oci.read_image(path)


def test_read_image_refuses_a_layout_without_exactly_one_manifest(
    image: tuple[Path, str, list[oci.Blob]],
) -> None:
    path, _, _ = image
    index = json.loads(image_files(path)["index.json"])
    rewrite(path, {"index.json": json.dumps({**index, "manifests": index["manifests"] * 2}).encode()})
    with pytest.raises(oci.OCIError, match="exactly one manifest"):
        oci.read_image(path)


def test_unpack_applies_the_layers_in_order(image: tuple[Path, str, list[oci.Blob]], tmp_path: Path) -> None:
    path, _, _ = image
    dest = tmp_path / "rootfs"
    oci.unpack(path, dest)
    assert (dest / "bin" / "tool").read_bytes() == b"#!/bin/sh\necho hi\n"
    assert os.path.samefile(dest / "bin" / "tool", dest / "bin" / "alias")
    assert os.readlink(dest / "bin" / "sh") == "tool"
    assert (dest / "tmp").stat().st_mode & 0o7777 == 0o1777
    assert (dest / "app" / "run").stat().st_mode & 0o777 == 0o755


def test_image_names_are_what_ctr_import_will_call_the_images(
    image: tuple[Path, str, list[oci.Blob]], tmp_path: Path
) -> None:
    path, _, layers = image
    assert oci.image_names(path) == [NAME]
    index = json.loads(image_files(path)["index.json"])
    del index["manifests"][0]["annotations"][oci.NAME_ANNOTATION]
    rewrite(path, {"index.json": json.dumps(index).encode()})
    with pytest.raises(oci.OCIError, match=oci.NAME_ANNOTATION):
        oci.image_names(path)
    with pytest.raises(oci.OCIError, match="not an OCI image-layout tar"):
        oci.image_names(layers[0].path)


def test_the_node_s_small_images_busybox_with_its_applets_and_one_binary(tmp_path: Path) -> None:
    busybox = tmp_path / "busybox"
    busybox.write_text("#!/bin/sh\necho busybox sh nc\n")  # answers --list as busybox does
    busybox.chmod(0o755)
    probe = tmp_path / "apiprobe"
    probe.write_bytes(b"\x7fELF")
    out = oci.busybox_image(tmp_path / "busybox.tar", busybox=busybox, extra={"bin/apiprobe": probe})
    image = oci.read_image(out)
    assert oci.image_names(out) == [oci.BUSYBOX_REF] and image.runtime["Cmd"] == ["sh"]
    rootfs = tmp_path / "rootfs"
    oci.unpack(out, rootfs)
    assert os.readlink(rootfs / "bin" / "sh") == os.readlink(rootfs / "bin" / "nc") == "busybox"
    assert (rootfs / "bin" / "apiprobe").stat().st_mode & 0o777 == 0o755
    assert "nobody:x:65534" in (rootfs / "etc" / "passwd").read_text()
    assert (rootfs / "tmp").stat().st_mode & 0o7777 == 0o1777
    assert sorted(p.name for p in tmp_path.iterdir()) == ["apiprobe", "busybox", "busybox.tar", "rootfs"]

    pause = oci.single_binary_image(tmp_path / "pause.tar", binary=probe, ref="aianalysis.local/pause:1")
    assert oci.read_image(pause).runtime == {"Entrypoint": ["/apiprobe"]}
