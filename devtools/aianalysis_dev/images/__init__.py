"""Container images built without Docker or a registry, as OCI image-layout tars a node imports.

    built = images.operator_image()          # the Dockerfile's image: Built(path, name, digest, size)
    cluster.import_image(built.path)         # → containerd knows ``built.name`` (and ``built.pinned``)
    workflows = images.workflow_images()     # workflowId → Built, for examples/workflows/*
    images.pinned_catalog(ROOT / "examples/catalog", tmp, workflows)   # the catalog pinned by digest

Each build is cached under ``~/.cache/aianalysis-operator/images/`` by a hash of its inputs (the lock
files, the sources, the Dockerfile, the base's recipe and package versions; busybox, kubectl and the
scripts) and rebuilt only when one changes; the same inputs give the same digests. Building needs
root (debootstrap, chroot, mount namespaces). ``python -m aianalysis_dev.images`` (``make image``)
is the command line.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from aianalysis_dev.images import _builder, _operator, _workflows
from aianalysis_dev.images._built import Built
from aianalysis_dev.images._cache import ImageBuildError, root
from aianalysis_dev.images._sandbox import Bind, Container
from aianalysis_dev.images._workflows import pinned_catalog, workflow_ids

__all__ = [
    "REPO_ROOT",
    "Bind",
    "Built",
    "Container",
    "ImageBuildError",
    "builder_wheels",
    "operator_image",
    "pinned_catalog",
    "root",
    "workflow_ids",
    "workflow_images",
]

REPO_ROOT = Path(__file__).resolve().parents[3]
"""The repository this package sits in (``devtools/`` is installed editable)."""


def _stderr(line: str) -> None:
    print(f"images: {line}", file=sys.stderr)


def operator_image(*, context: Path = REPO_ROOT, log: Callable[[str], None] = _stderr) -> Built:
    """The operator's image (``aianalysis.local/aianalysis-operator:<version>``) from the Dockerfile in
    ``context``."""
    _check_context(context)
    return _operator.operator_image(context=context, log=log)


def builder_wheels(*, context: Path = REPO_ROOT, log: Callable[[str], None] = _stderr) -> list[Path]:
    """What the Dockerfile's builder stage puts in ``/wheels`` (the locked dependencies and the
    operator's wheel), made by its pip commands on this machine."""
    _check_context(context)
    return _builder.wheels(context=context, log=log).files()


def workflow_images(*, context: Path = REPO_ROOT, log: Callable[[str], None] = _stderr) -> dict[str, Built]:
    """``workflowId`` → the image of ``examples/workflows/<workflowId>/`` in ``context``."""
    _check_context(context)
    return _workflows.workflow_images(context=context, log=log)


def _check_context(context: Path) -> None:
    if not (context / "Dockerfile").is_file():
        raise ImageBuildError(f"{context} is not the repository (no Dockerfile): pass context=")
