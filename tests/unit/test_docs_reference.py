"""The documentation site: its reference pages cover everything the code has (every setting, metric,
CRD field, tool and offline rule), the strict build passes with a page the nav does not list, and
the README stays short with every link into docs/ resolving."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config

from aianalysis import metrics, settings
from aianalysis.analysis import offline, tools
from aianalysis_dev import docsite

ROOT = Path(__file__).resolve().parents[2]
PAGES = {path: page() for path, page in docsite.PAGES.items()}


def test_every_setting_is_in_the_configuration_reference() -> None:
    page = PAGES["reference/configuration.md"]
    entries = list(settings.reference())
    assert len(entries) > 50
    missing = [entry.env for entry in entries if f"`{entry.env}`" not in page]
    assert not missing
    for entry in entries:  # each on its own row, with its description
        row = next(line for line in page.splitlines() if line.startswith(f"| `{entry.env}`"))
        assert entry.doc.split(".")[0].replace("|", "\\|") in row, entry.env


def test_the_chart_value_of_a_setting_is_named() -> None:
    rows = {
        line.split("`")[1]: line
        for line in PAGES["reference/configuration.md"].splitlines()
        if line.startswith("| `")
    }
    assert rows["AIANALYSIS_EXECUTOR_BACKOFF_LIMIT"].endswith("| `executor.backoffLimit` |")
    # set inside `with .Values.prometheus`: named by its full path
    assert rows["AIANALYSIS_PROMETHEUS_TENANT"].endswith("| `prometheus.tenant` |")
    assert rows["AIANALYSIS_AWS_REGION"].endswith("| `bedrock.region` |")
    assert rows["AIANALYSIS_MAX_TOOL_STEPS"].endswith("|  |")  # the chart does not set it
    values = yaml.safe_load((docsite.CHART_TEMPLATES.parent / "values.yaml").read_text())
    for path in docsite.chart_values().values():  # every named value is one values.yaml has
        node = values
        for part in path.split("."):
            assert isinstance(node, dict) and part in node, path
            node = node[part]


def test_every_metric_is_in_the_metrics_reference() -> None:
    page = PAGES["reference/metrics.md"]
    # What /metrics exports, read from the registry (not from the generator's own walk).
    families = [
        family.name for family in metrics.REGISTRY.collect()
        if not family.name.startswith(("process_", "python_"))
    ]  # fmt: skip
    assert len(families) > 15
    for name in families:
        exported = {"counter": f"{name}_total", "info": f"{name}_info"}.get(
            next(f.type for f in metrics.REGISTRY.collect() if f.name == name), name
        )
        assert f"`{exported}`" in page, exported


def _fields(schema: Mapping[str, Any], path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for name, sub in schema.get("properties", {}).items():
        yield f"{path}.{name}".lstrip("."), sub
        yield from _fields(sub, f"{path}.{name}")
    for key, mark in (("items", "[]"), ("additionalProperties", ".*")):
        if isinstance(sub := schema.get(key), Mapping):
            yield from _fields(sub, path + mark)


def test_every_crd_field_is_in_the_crd_reference() -> None:
    page = PAGES["reference/crds.md"]
    count = 0
    for crd in docsite.crds():
        crd_name = crd["metadata"]["name"]
        for version in crd["spec"]["versions"]:
            heading = f"## {crd['spec']['names']['kind']} ({crd['spec']['group']}/{version['name']})\n"
            assert heading in page
            section = page.split(heading)[1].split("\n## ")[0]
            for field, sub in _fields(version["schema"]["openAPIV3Schema"], ""):
                if field.split(".")[0] in ("apiVersion", "kind", "metadata"):
                    continue
                count += 1
                row = next((line for line in section.splitlines() if line.startswith(f"| `{field}` |")), None)
                assert row is not None, f"{crd_name}: {field} undocumented"
                description = " ".join(str(sub.get("description", "")).split())[:40]
                assert description.replace("|", "\\|") in row, field
                for value in sub.get("enum", ()):
                    assert f"`{value}`" in row, (field, value)
    assert count > 200


def test_every_tool_is_in_the_tool_reference() -> None:
    page = PAGES["reference/tools.md"]
    names = {*tools.TOOL_NAMES, *tools.PROMETHEUS_TOOL_NAMES, *tools.CATALOG_TOOL_NAMES}
    assert len(names) > 15
    assert {name for name in names if f"## `{name}`" not in page} == set()


def test_every_offline_rule_is_in_the_rules_reference_in_order() -> None:
    page = PAGES["reference/offline-rules.md"]
    headings = re.findall(r"^## \d+\. `([^`]+)`$", page, flags=re.MULTILINE)
    assert headings == [rule.name for rule in offline.RULES]
    assert all(rule.doc.strip() and rule.doc.strip().splitlines()[0] in page for rule in offline.RULES)


def test_the_strict_build_passes_and_a_page_missing_from_the_nav_still_shows(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    (docs / "a-new-page.md").write_text("# A page a branch added\n\nLinks [home](index.md).\n")
    config = load_config(
        str(ROOT / "mkdocs.yml"), docs_dir=str(docs), site_dir=str(tmp_path / "site"), strict=True
    )
    build(config)  # strict: any warning (a broken link or anchor, a nav entry not found) raises
    site = tmp_path / "site"
    for path in docsite.PAGES:
        assert (site / path.removesuffix(".md") / "index.html").is_file(), path
    home = (site / "index.html").read_text()
    assert docsite.MORE in home and "a-new-page/" in home


README_LINK = re.compile(r"\]\((docs/[^)#\s]+)(?:#([^)\s]+))?\)")


def _slug(heading: str) -> str:
    """A heading's anchor as the site's table of contents makes it (python-markdown's toc)."""
    text = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def test_the_readme_is_short_and_its_docs_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    links = README_LINK.findall(readme)
    assert len(links) >= 10, "the README links to the site's pages"
    for target, anchor in links:
        page = target.removeprefix("docs/")
        if page in docsite.PAGES:
            text = PAGES[page]
        else:
            assert (ROOT / target).is_file(), target
            text = (ROOT / target).read_text()
        if anchor:
            headings = re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE)
            assert anchor in {_slug(heading) for heading in headings}, f"{target}#{anchor}"


def test_the_readme_gives_the_command_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    commands = re.findall(r"^make \w+", ci, flags=re.MULTILINE)
    assert commands == ["make test"]
    assert re.search(r"^make demo\b", readme, flags=re.MULTILINE)
    assert re.search(r"^make test\b", readme, flags=re.MULTILINE)


@pytest.mark.parametrize("page", sorted(docsite.PAGES))
def test_a_generated_page_is_not_kept_under_docs(page: str) -> None:
    assert not (ROOT / "docs" / page).exists(), "generated at build time: a copy here would go stale"
