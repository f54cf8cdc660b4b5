"""OCI image layouts written by the dev tooling: what ``ctr images import`` reads of them."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from aianalysis_dev import oci


def member(tar: tarfile.TarFile, name: str) -> bytes:
    extracted = tar.extractfile(name)
    assert extracted is not None
    return extracted.read()


def blob(tar: tarfile.TarFile, digest: str) -> bytes:
    data = member(tar, "blobs/sha256/" + digest.removeprefix("sha256:"))
    assert "sha256:" + hashlib.sha256(data).hexdigest() == digest  # content-addressed for real
    return data


def test_an_image_names_itself_and_its_blobs_match_their_digests(tmp_path: Path) -> None:
    layer = oci.files_layer(
        tmp_path / "layer.tar", {"bin/tool": b"#!/bin/sh\necho hi\n"}, symlinks={"bin/alias": "tool"}
    )
    config = oci.Config(entrypoint=["/bin/tool"], user="65534", labels={"a": "b"})
    image = oci.write_image(tmp_path / "image.tar", ref="example.test/tool:2", layers=[layer], config=config)
    assert oci.image_names(image) == ["example.test/tool:2"]
    with tarfile.open(image) as tar:
        (entry,) = json.loads(member(tar, "index.json"))["manifests"]
        manifest = json.loads(blob(tar, entry["digest"]))
        image_config = json.loads(blob(tar, manifest["config"]["digest"]))
        (layer_descriptor,) = manifest["layers"]
        with tarfile.open(fileobj=io.BytesIO(blob(tar, layer_descriptor["digest"]))) as inner:
            entries = {m.name: m for m in inner.getmembers()}
    assert entry["annotations"]["org.opencontainers.image.ref.name"] == "2"
    assert image_config["rootfs"]["diff_ids"] == [layer_descriptor["digest"]]  # uncompressed: diff ID
    assert image_config["config"] == {
        "Entrypoint": ["/bin/tool"],
        "Env": [oci.DEFAULT_PATH],
        "User": "65534",
        "Labels": {"a": "b"},
    }
    assert sorted(entries) == ["bin", "bin/alias", "bin/tool"]
    assert entries["bin/alias"].linkname == "tool"
    assert entries["bin/tool"].mode == 0o755


def test_the_same_inputs_give_the_same_image(tmp_path: Path) -> None:
    def build(name: str) -> bytes:
        layer = oci.files_layer(tmp_path / f"{name}.layer", {"etc/x": b"x"})
        return oci.write_image(tmp_path / name, ref="r/x:1", layers=[layer], config=oci.Config()).read_bytes()

    assert build("one") == build("two")


def test_a_tar_without_the_name_annotation_is_refused(tmp_path: Path) -> None:
    unnamed = tmp_path / "unnamed.tar"
    index = json.dumps({"schemaVersion": 2, "manifests": [{"digest": "sha256:00", "size": 1}]}).encode()
    with tarfile.open(unnamed, "w") as tar:
        info = tarfile.TarInfo("index.json")
        info.size = len(index)
        tar.addfile(info, io.BytesIO(index))
    with pytest.raises(oci.ImageError, match=oci.REF_ANNOTATION):
        oci.image_names(unnamed)
    layer = oci.files_layer(tmp_path / "layer.tar", {"etc/x": b"x"})
    with pytest.raises(oci.ImageError, match="not an OCI image-layout tar"):
        oci.image_names(layer)


def test_paths_outside_the_image_are_refused(tmp_path: Path) -> None:
    with pytest.raises(oci.ImageError, match="not a path inside an image"):
        oci.files_layer(tmp_path / "l.tar", {"../etc/passwd": b""})
