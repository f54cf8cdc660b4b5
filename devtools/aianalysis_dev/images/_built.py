"""What a build produced: an OCI image-layout tar, the name ``ctr images import`` gives it and the
digest that pins it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

_FILE = "image.json"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Built:
    path: Path
    """The OCI image-layout tar (``cluster.import_image(path)``, ``ctr images import``)."""
    name: str
    """``repository:tag``, the name the import gives the image (the index's annotation)."""
    digest: str
    """The manifest's digest: ``sha256:…``."""
    size: int
    """Bytes of its layers, uncompressed."""

    @property
    def repository(self) -> str:
        return self.name.rpartition(":")[0]

    @property
    def pinned(self) -> str:
        """``repository@sha256:…``: the reference a catalog pins (and a Pod may run)."""
        return f"{self.repository}@{self.digest}"

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "digest": self.digest, "pinned": self.pinned, "size": self.size,
                "path": str(self.path)}  # fmt: skip

    def save(self, directory: Path, file: str = _FILE) -> None:
        record = {**self.as_json(), "path": self.path.name}
        (directory / file).write_text(json.dumps(record, indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path, file: str = _FILE) -> Built:
        """A record ``save`` wrote, its path now relative to where the entry is."""
        record = json.loads((directory / file).read_text())
        return cls(path=directory / record["path"], name=record["name"], digest=record["digest"],
                   size=record["size"])  # fmt: skip
