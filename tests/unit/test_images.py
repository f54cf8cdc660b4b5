"""The pure parts of the image build (devtools/aianalysis_dev/images): which mirror apt uses, the
Dockerfile's user, cache keys and entries. The builds themselves: tests/integration/test_image.py
and test_workflow_images.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from aianalysis_dev import dockerfile
from aianalysis_dev.images import _cache, _debian, _operator

DEB822 = """\
Types: deb-src
URIs: http://source.invalid/debian
Suites: bookworm
Components: main

Types: deb
# a comment: Suites: trixie
URIs: http://mirror.invalid/debian http://second.invalid/debian
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://security.invalid/debian-security
Suites: bookworm-security
Components: main
"""


def test_mirror_is_the_first_binary_source_of_the_suites_main_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = tmp_path / "sources.list.d"
    listed.mkdir()
    (listed / "debian.sources").write_text(DEB822)
    monkeypatch.setattr(_debian, "SOURCES", (tmp_path / "sources.list", listed))
    assert _debian.mirror() == (
        "http://mirror.invalid/debian",
        Path("/usr/share/keyrings/debian-archive-keyring.gpg"),
    )

    (listed / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text(
        "# deb http://commented.invalid/debian bookworm main\n"
        "deb http://other.invalid/debian trixie main\n"
        "deb [arch=amd64 signed-by=/etc/apt/keyrings/k.gpg] http://line.invalid/debian bookworm main extra\n"
    )
    assert _debian.mirror() == ("http://line.invalid/debian", Path("/etc/apt/keyrings/k.gpg"))

    (tmp_path / "sources.list").write_text("deb http://other.invalid/debian trixie main\n")
    with pytest.raises(_debian.DebianError, match="no apt source for the main archive of bookworm"):
        _debian.mirror()


def test_the_users_line_of_the_image_is_the_dockerfiles_useradd(tmp_path: Path) -> None:
    [_, runtime] = dockerfile.read(Path(__file__).resolve().parents[2] / "Dockerfile")
    base = tmp_path / "base"
    (base / "etc").mkdir(parents=True)
    (base / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (base / "etc/group").write_text("root:x:0:\n")
    (tmp_path / "app").mkdir()
    _operator._add_user(runtime, base=base, app=tmp_path / "app")
    assert (tmp_path / "app/etc/passwd").read_text().splitlines() == [
        "root:x:0:0:root:/root:/bin/bash",
        "aianalysis:x:65532:65532::/nonexistent:/usr/sbin/nologin",
    ]
    assert (tmp_path / "app/etc/group").read_text().splitlines() == ["root:x:0:", "aianalysis:x:65532:"]


def test_a_key_follows_contents_and_labels_not_times(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("a = 1\n")
    (tmp_path / "src" / "__pycache__").mkdir()
    (tmp_path / "src" / "__pycache__" / "a.pyc").write_bytes(b"\x00")

    def key() -> str:
        return (
            _cache.Key("k")
            .text("v", "1")
            .path("src", tmp_path / "src", ignore=lambda p: p.suffix == ".pyc")
            .hexdigest()
        )

    first = key()
    (tmp_path / "src" / "__pycache__" / "a.pyc").write_bytes(b"\x01")
    (tmp_path / "src" / "a.py").touch()
    assert key() == first
    (tmp_path / "src" / "a.py").write_text("a = 2\n")
    assert key() != first
    assert _cache.Key("k").text("ab", "c").hexdigest() != _cache.Key("k").text("a", "bc").hexdigest()


def test_an_entry_is_built_once_published_whole_and_old_ones_are_pruned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIANALYSIS_IMAGE_CACHE", str(tmp_path))
    builds: list[str] = []

    def build(key: str) -> Path:
        def make(out: Path) -> None:
            builds.append(key)
            (out / "thing").write_text(key)

        return _cache.entry("kind", key, make)

    assert (build("a") / "thing").read_text() == "a"
    assert build("a") == tmp_path / "kind-a" and builds == ["a"], "reused"

    def broken(out: Path) -> None:
        (out / "half").write_text("")
        raise _cache.ImageBuildError("step failed")

    with pytest.raises(_cache.ImageBuildError):
        _cache.entry("kind", "b", broken)
    assert not (tmp_path / "kind-b").exists(), "a failed build publishes nothing"
    for key in ("b", "c", "d", "e"):
        build(key)
    kept = sorted(p.name for p in tmp_path.glob("kind-*"))
    assert kept == ["kind-c", "kind-d", "kind-e"], f"the newest and {_cache.KEEP_PER_KIND} others"
