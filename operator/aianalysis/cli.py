"""The ``aianalysis`` command line.

One subcommand per function; ``main`` only parses and turns user errors (bad catalog, bad
configuration) into exit code 2 with a one-line message instead of a traceback. Add a command by
writing ``_add_<name>(commands)`` that registers its parser with ``set_defaults(handler=...)``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pydantic
import yaml

import aianalysis
from aianalysis import catalog, errors, evaluation, pipeline, resources, settings

USAGE_ERROR = 2

Handler = Callable[[argparse.Namespace], int]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return USAGE_ERROR
    try:
        return handler(args)
    except (errors.CatalogError, errors.ConfigError) as exc:
        print(f"aianalysis: error: {exc}", file=sys.stderr)
        return USAGE_ERROR


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aianalysis",
        description="An LLM picks a remediation workflow for a Kubernetes incident; the operator makes sure "
        "it is valid.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {aianalysis.__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    _add_run(commands)
    _add_demo(commands)
    _add_analyze(commands)
    _add_catalog(commands)
    _add_eval(commands)
    return parser


# ---- aianalysis run / demo / analyze -----------------------------------------------------------


def _add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser("run", help="run the operator against the current kubeconfig (or in-cluster)")
    run.add_argument(
        "-n",
        "--namespace",
        action="append",
        default=[],
        help="watch only this namespace (repeatable); default: all namespaces",
    )
    run.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    run.set_defaults(handler=operator_run)


def operator_run(args: argparse.Namespace) -> int:
    config = settings.from_env()  # fail fast, before importing kopf, with a one-line message

    from aianalysis import handlers  # noqa: PLC0415  # imports kopf: only for this command

    handlers.run(
        namespaces=args.namespace,
        log_format=config.log_format,
        verbose=args.verbose,
    )
    return 0


def _add_demo(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = commands.add_parser(
        "demo", help="local control plane + CRDs + catalog + operator + example incidents"
    )
    demo.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the analyses")
    demo.set_defaults(handler=lambda args: _demo().run(timeout_seconds=args.timeout))


def _demo() -> Any:
    from aianalysis import demo  # noqa: PLC0415  # the dev cluster is only for this command

    return demo


def _add_analyze(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    analyze = commands.add_parser(
        "analyze", help="run the whole pipeline on one AIAnalysis file without a cluster; print the status"
    )
    analyze.add_argument("-f", "--filename", required=True, type=Path, help="an AIAnalysis YAML file")
    analyze.add_argument(
        "--catalog",
        nargs="+",
        required=True,
        type=Path,
        metavar="PATH",
        help="RemediationWorkflow YAML files or directories",
    )
    analyze.add_argument(
        "--provider",
        choices=("offline", "anthropic"),
        help="default: anthropic when ANTHROPIC_API_KEY is set, else offline",
    )
    analyze.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    analyze.set_defaults(handler=analyze_file)


def analyze_file(args: argparse.Namespace) -> int:
    spec = _read_analysis(args.filename)
    index = catalog.load_paths(args.catalog)
    config = settings.from_env(provider=args.provider)
    try:
        result = asyncio.run(pipeline.analyze_without_cluster(spec, catalog=index, settings=config))
    except errors.ProviderError as exc:
        print(f"aianalysis: {exc.reason}: {exc}", file=sys.stderr)
        return 1
    body = result.wire()
    if args.output == "json":
        print(json.dumps({"status": body}, indent=2))
    else:
        print(yaml.safe_dump({"status": body}, sort_keys=False, width=110), end="")
    return 0


def _read_analysis(path: Path) -> resources.AIAnalysisSpec:
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise errors.ConfigError(f"{path}: cannot read: {exc}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "AIAnalysis":
        raise errors.ConfigError(f"{path}: not an AIAnalysis object")
    try:
        return resources.AIAnalysisSpec.model_validate(doc.get("spec") or {})
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise errors.ConfigError(f"{path}: invalid spec: spec.{where}: {first['msg']}") from None


# ---- aianalysis catalog ... ----------------------------------------------------------------


def _add_catalog(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = commands.add_parser("catalog", help="inspect a RemediationWorkflow catalog")
    group.set_defaults(handler=lambda _args: _usage(group))
    actions = group.add_subparsers(title="catalog commands", metavar="ACTION")
    search = actions.add_parser(
        "search",
        help="search the catalog the way the LLM's search tool does",
        description="Search a RemediationWorkflow catalog exactly as the LLM's search tool does: the "
        "business context (--environment, --priority, --business-category, --risk-tolerance) decides "
        "which workflows are eligible at all, then --signal-type/--severity/--component filter and "
        "--query ranks. Confidence = fraction of the best possible match: 1.0 means the signal type "
        "matches and every query word is in the title; a signal-type match alone is worth 0.6.",
    )
    search.add_argument(
        "--catalog",
        required=True,
        nargs="+",
        metavar="PATH",
        help="YAML file or directory of YAML files with RemediationWorkflow objects",
    )
    search.add_argument("--query", default="", metavar="TEXT", help="free text to rank by")
    search.add_argument("--signal-type", metavar="T", help="only workflows handling this signal type")
    search.add_argument("--severity", choices=["critical", "high", "medium", "low"], help="incident severity")
    search.add_argument("--component", metavar="C", help="affected component, e.g. deployment")
    business = search.add_argument_group("business context (of the incident; decides eligibility)")
    business.add_argument("--environment", metavar="E", help="e.g. production; absent = unknown")
    business.add_argument("--priority", metavar="P", help="P0..P9; absent = unknown")
    business.add_argument("--business-category", metavar="B", help="e.g. payments; absent = unknown")
    business.add_argument(
        "--risk-tolerance",
        choices=list(resources.RISK_ORDER),
        default="low",
        help="highest riskLevel allowed (default: low, the safe default of an incident)",
    )
    search.add_argument("--top-k", type=_top_k, default=catalog.SearchQuery.top_k, metavar="K")
    search.add_argument("--all-versions", action="store_true", help="list every version, not only the latest")
    search.add_argument("-o", "--output", choices=["table", "json"], default="table", help="default: table")
    search.set_defaults(handler=catalog_search)


def catalog_search(args: argparse.Namespace) -> int:
    business = _business(args)  # flags first: a typo should not wait for a big catalog to load
    found = catalog.load_paths(args.catalog)
    query = catalog.SearchQuery(
        text=args.query,
        signal_type=args.signal_type,
        severity=args.severity,
        component=args.component,
        top_k=args.top_k,
        all_versions=args.all_versions,
    )
    hits = found.search(query, business=business)
    rows = [_row(hit) for hit in hits]
    if args.output == "json":
        print(json.dumps(rows, indent=2))
    else:
        print(_table(rows))
    return 0


def _business(args: argparse.Namespace) -> resources.BusinessContext:
    try:
        return resources.BusinessContext(
            environment=args.environment,
            priority=args.priority,
            business_category=args.business_category,
            risk_tolerance=args.risk_tolerance,
        )
    except pydantic.ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise errors.ConfigError(f"invalid business context: {problems}") from exc


def _row(hit: catalog.SearchHit) -> dict[str, Any]:
    return {
        "workflow_id": hit.workflow_id,
        "version": hit.version,
        "title": hit.title,
        "description": hit.description,
        "confidence": round(hit.confidence, 3),
    }


def _table(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return "No eligible workflow matches."
    header = ("WORKFLOW ID", "VERSION", "CONFIDENCE", "TITLE")
    cells = [(row["workflow_id"], row["version"], f"{row['confidence']:.3f}", row["title"]) for row in rows]
    widths = [max(len(line[column]) for line in [header, *cells]) for column in range(3)]
    return "\n".join(
        "  ".join(
            [*(cell.ljust(width) for cell, width in zip(line[:3], widths, strict=True)), line[3]]
        ).rstrip()
        for line in [header, *cells]
    )


def _top_k(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 1 <= value <= catalog.model.MAX_TOP_K:
        raise argparse.ArgumentTypeError(f"must be between 1 and {catalog.model.MAX_TOP_K}")
    return value


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return USAGE_ERROR


# ---- aianalysis eval ---------------------------------------------------------------------------


def _add_eval(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    evaluate = commands.add_parser(
        "eval",
        help="measure workflow selection on a corpus of scenarios; write JSON, Markdown and PNG reports",
        description=evaluation.command.DESCRIPTION,
    )
    evaluation.command.add_arguments(evaluate)
    evaluate.set_defaults(handler=evaluation.command.from_args)
