"""Workflow images for the example catalog: a static busybox (the distribution's ``busybox-static``),
the kubectl this project builds (``hack/build-k8s.sh``, static) and one script per workflow
(``examples/workflows/<workflowId>/run.sh``, sharing ``lib.sh``), running as a non-root user.

All images share one layer (busybox, kubectl, the script library, passwd): a node stores it once.
Each image adds its script. The executor passes the workflow's parameters as environment variables.
"""

from __future__ import annotations

import subprocess
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from aianalysis_dev import oci
from aianalysis_dev.images import _cache, _debian
from aianalysis_dev.images._built import Built

REPOSITORY = "aianalysis.local/workflows"
USER = "65532:65532"
TMP = "/tmp"  # noqa: S108 — the image's /tmp (a directory of the layer), not this machine's
ENV = {"PATH": "/usr/local/bin:/bin", "HOME": TMP}
"""``HOME`` is where kubectl keeps its discovery cache: ``/tmp``, writable in any Pod."""
SCRIPT = "/workflow/run.sh"
LIBRARY = "/workflow/lib.sh"
PASSWD = b"root:x:0:0:root:/root:/bin/false\nworkflow:x:65532:65532:workflow:/tmp:/bin/false\n"
GROUP = b"root:x:0:\nworkflow:x:65532:\n"


def workflow_ids(context: Path) -> list[str]:
    return sorted(p.name for p in (context / "examples" / "workflows").iterdir() if (p / "run.sh").is_file())


def workflow_images(*, context: Path, log: Callable[[str], None]) -> dict[str, Built]:
    """``workflowId`` → its image, built when busybox, kubectl or a script changed."""
    scripts = context / "examples" / "workflows"
    ids = workflow_ids(context)
    from aianalysis_dev import devcluster  # noqa: PLC0415 — the typed client it imports is slow to load

    busybox = _busybox()
    kubectl = devcluster.find_binaries().kubectl
    version = tomllib.loads((context / "pyproject.toml").read_text())["project"]["version"]
    key = (
        _cache.Key("workflows")
        .text("version", version)
        .path("busybox", busybox)
        .path("kubectl", kubectl)
        .path("scripts", scripts)
        .paths("recipe", [Path(__file__), Path(oci.__file__)])
        .hexdigest()
    )

    def build(out: Path) -> None:
        with _cache.timed("workflow images", log):
            _build(out, ids=ids, scripts=scripts, busybox=busybox, kubectl=kubectl, version=version)

    entry = _cache.entry("workflows", key, build)
    return {workflow: Built.load(entry, f"{workflow}.json") for workflow in ids}


def _busybox() -> Path:
    version = _debian.candidate_versions(["busybox-static"])["busybox-static"]

    def build(out: Path) -> None:
        deb = _debian.download(["busybox-static"], out / "deb")["busybox-static"]
        _debian.unpack(deb, out / "root")
        (out / "root" / "bin" / "busybox").rename(out / "busybox")
        _cache.remove_tree(out / "deb")
        _cache.remove_tree(out / "root")

    key = _cache.Key("busybox").text("version", version).hexdigest()
    return _cache.entry("busybox", key, build) / "busybox"


def _build(out: Path, *, ids: list[str], scripts: Path, busybox: Path, kubectl: Path, version: str) -> None:
    applets = subprocess.run(
        [str(busybox), "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    files: dict[str, oci.Entry] = {
        "/bin/busybox": oci.File(content=busybox, mode=0o755),
        **{f"/bin/{applet}": oci.Symlink(target="busybox") for applet in applets if applet != "busybox"},
        "/usr/local/bin/kubectl": oci.File(content=kubectl, mode=0o755),
        LIBRARY: oci.File(content=scripts / "lib.sh"),
        "/etc/passwd": oci.File(content=PASSWD),
        "/etc/group": oci.File(content=GROUP),
        **{path: oci.Dir() for path in ("/dev", "/proc", "/sys", "/etc", "/workflow")},
        TMP: oci.Dir(mode=0o1777),
    }
    shared = oci.files_layer(files, out / "shared.tar")
    for workflow in ids:
        layer = oci.files_layer(
            {SCRIPT: oci.File(content=scripts / workflow / "run.sh", mode=0o755)},
            out / f"{workflow}.layer.tar",
        )
        name = f"{REPOSITORY}/{workflow}:{version}"
        digest = oci.write_image(
            out / f"{workflow}.tar",
            name=name,
            layers=[shared, layer],
            config=oci.Config(entrypoint=[SCRIPT], user=USER, working_dir=TMP, env=ENV),
            history=["busybox-static, kubectl, /workflow/lib.sh", f"examples/workflows/{workflow}/run.sh"],
        )
        Built(path=out / f"{workflow}.tar", name=name, digest=digest, size=shared.size + layer.size).save(
            out, f"{workflow}.json"
        )
        layer.path.unlink()
    shared.path.unlink()


def pinned_catalog(source: Path, dest: Path, images: Mapping[str, Built]) -> list[Path]:
    """The catalog files directly in ``source``, written to ``dest`` with the ``containerImage`` of
    every workflow that has an image here replaced by that image pinned by digest (the others are
    left as they are). Returns the files written."""
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for file in sorted(source.glob("*.yaml")):
        documents: list[Any] = [doc for doc in yaml.safe_load_all(file.read_text()) if doc]
        for doc in documents:
            if doc.get("kind") == "RemediationWorkflow" and (built := images.get(doc["spec"]["workflowId"])):
                doc["spec"]["execution"]["containerImage"] = built.pinned
        (dest / file.name).write_text(yaml.safe_dump_all(documents, sort_keys=False))
        written.append(dest / file.name)
    return written
