"""The ``aianalysis`` command line.

One subcommand per function; ``main`` only parses and turns user errors (bad catalog, bad
configuration) into exit code 2 with a one-line message instead of a traceback. Add a command by
writing ``_add_<name>(commands)`` that registers its parser with ``set_defaults(handler=...)``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib
import json
import re
import sys
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pydantic
import yaml

import aianalysis
import aianalysis.catalog.importer
from aianalysis import catalog, errors, evaluation, resources, settings
from aianalysis.analysis import llm, pipeline, pricing
from aianalysis.executor import approval

if typing.TYPE_CHECKING:
    from aianalysis.executor import submit  # at run time only in cluster commands (it brings the client)

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
    except (errors.ClusterError, errors.ClusterRejectedError) as exc:  # e.g. RBAC: not allowed to read
        print(f"aianalysis: error: {exc}", file=sys.stderr)
        return 1


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
    _add_mcp(commands)

    _add_executor(commands)
    _add_show(commands)
    _add_approve(commands)
    _add_reject(commands)
    _add_console(commands)
    return parser


# ---- aianalysis run / demo / analyze -----------------------------------------------------------


def _add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser("run", help="run the operator against the current kubeconfig (or in-cluster)")
    _process_flags(run, verb="watch")
    run.set_defaults(handler=operator_run)


def _process_flags(run: argparse.ArgumentParser, *, verb: str) -> None:
    """The flags of a long-running process (``run``, ``executor run``): namespaces and verbosity."""
    run.add_argument(
        "-n",
        "--namespace",
        action="append",
        default=[],
        help=f"{verb} only this namespace (repeatable); default: all namespaces",
    )
    run.add_argument("-v", "--verbose", action="store_true", help="debug logging")


def operator_run(args: argparse.Namespace) -> int:
    config = settings.from_env()  # fail fast, before importing kopf, with a one-line message
    pricing.price_table(config)  # a price table that cannot be read stops here too
    _check_model(config)

    from aianalysis.controller import handlers  # noqa: PLC0415  # imports kopf: only for this command

    handlers.run(
        namespaces=args.namespace,
        log_format=config.observability.log_format,
        verbose=args.verbose,
    )
    return 0


def _add_demo(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = commands.add_parser(
        "demo", help="local control plane + CRDs + catalog + operator + example incidents"
    )
    demo.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the analyses")
    demo.set_defaults(handler=lambda args: _demo().run(timeout_seconds=args.timeout))


DEV_PACKAGE = "aianalysis_dev"


def _demo() -> Any:
    """The demo lives in the development package, which the operator image does not contain: it is
    loaded by name, so that the runtime package never imports dev tooling (an import contract)."""
    try:
        return importlib.import_module(f"{DEV_PACKAGE}.demo")
    except ModuleNotFoundError as exc:
        if exc.name != DEV_PACKAGE:
            raise
        raise errors.ConfigError(
            "`aianalysis demo` needs the development tooling (the aianalysis-dev package, folder "
            "devtools/ of the repository), which the operator image does not ship: run `make demo` "
            "from a checkout"
        ) from None


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
        choices=settings.PROVIDERS,
        help="default: AIANALYSIS_PROVIDER, else anthropic when ANTHROPIC_API_KEY is set, else offline",
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


def _check_model(config: settings.Settings) -> None:
    """The startup model check: an unknown or retired model raises ``ConfigError`` (one line, exit
    2); when the check cannot tell (the platform is down), one warning line and on we go."""
    warning = asyncio.run(llm.check_model(config))
    if warning:
        print(f"aianalysis: warning: {warning}", file=sys.stderr)


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
    search.add_argument(
        "--action-type", metavar="A", help="only workflows of this action type, e.g. RestartPod"
    )
    search.add_argument(
        "--severity",
        choices=["critical", "high", "medium", "low", "warning", "info"],
        help="incident severity (warning = medium, info = low)",
    )
    search.add_argument("--component", metavar="C", help="affected component, e.g. deployment")
    business = search.add_argument_group("business context (of the incident; decides eligibility)")
    business.add_argument("--environment", metavar="E", help="e.g. production; absent = unknown")
    business.add_argument("--priority", metavar="P", help="P0..P9; absent = unknown")
    business.add_argument("--business-category", metavar="B", help="e.g. payments; absent = unknown")
    business.add_argument(
        "--custom-label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a label of the incident's businessContext.customLabels (repeatable)",
    )
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
    _add_catalog_import(actions)


def _add_catalog_import(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    import_parser = actions.add_parser(
        "import",
        help="convert Kubernaut-format RemediationWorkflows into this operator's format",
        description="Convert Kubernaut-format RemediationWorkflow YAML (kubernaut.ai/v1alpha1) into this "
        "operator's format (kubernaut.io/v1alpha1), one file per workflow in DIR, and report per source "
        "file what was dropped and why. A document that cannot be converted is reported and skipped; the "
        "others still import, versions of one workflow side by side. Exit code 1 when anything was not "
        "imported.",
    )
    import_parser.add_argument("--from", dest="source_format", choices=["kubernaut"], required=True)
    import_parser.add_argument(
        "-f", "--filename", dest="paths", nargs="+", required=True, type=Path, metavar="PATH"
    )
    import_parser.add_argument("-o", "--output-dir", dest="out", required=True, type=Path, metavar="DIR")
    import_parser.add_argument(
        "--risk-level",
        choices=list(resources.RISK_ORDER),
        default=catalog.kubernaut.DEFAULT_RISK_LEVEL,
        help="riskLevel of workflows without the aianalysis.kubernaut.io/risk-level annotation "
        "(Kubernaut has no risk level at selection; default: low, so the catalog is selectable as in "
        "Kubernaut; execution still needs approval)",
    )
    import_parser.add_argument("--overwrite", action="store_true", help="replace files that exist in DIR")
    import_parser.set_defaults(handler=catalog_import_command)


def catalog_import_command(args: argparse.Namespace) -> int:
    reports = aianalysis.catalog.importer.import_kubernaut(
        args.paths, out=args.out, risk_level=args.risk_level, overwrite=args.overwrite
    )
    print(aianalysis.catalog.importer.render(reports))
    return 1 if any(report.error is not None or report.refused for report in reports) else 0


def catalog_search(args: argparse.Namespace) -> int:
    business = _business(args)  # flags first: a typo should not wait for a big catalog to load
    found = catalog.load_paths(args.catalog)
    query = catalog.SearchQuery(
        text=args.query,
        signal_type=args.signal_type,
        action_type=args.action_type,
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
            custom_labels=_custom_labels(getattr(args, "custom_label", [])),
        )
    except pydantic.ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise errors.ConfigError(f"invalid business context: {problems}") from exc


def _custom_labels(pairs: list[str]) -> dict[str, str] | None:
    labels = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise errors.ConfigError(f"--custom-label must be KEY=VALUE, got {pair!r}")
        labels[key.strip()] = value.strip()
    return labels or None


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


# ---- aianalysis mcp ----------------------------------------------------------------------------


def _add_mcp(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "mcp",
        help="serve the workflow catalog tools over MCP (stdio or streamable HTTP); read-only",
        description="An MCP server with the catalog tools the operator's LLM uses (search, details...). "
        "The business context given here is applied to every search exactly as for an incident; a "
        "caller's business filters can only narrow it. Without --catalog it reads the cluster's "
        "RemediationWorkflows (current kubeconfig or in-cluster) and follows their changes.",
    )
    serve.add_argument(
        "--catalog",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="RemediationWorkflow YAML files or directories",
    )
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default: stdio")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="http: address to listen on (default 127.0.0.1; any other needs AIANALYSIS_MCP_TOKEN and "
        "AIANALYSIS_MCP_TLS_CERT_FILE/_KEY_FILE)",
    )
    serve.add_argument("--port", type=int, default=8000, help="http: port (default 8000); path /mcp")
    business = serve.add_argument_group("business context (fixed for every call; decides eligibility)")
    business.add_argument("--environment", metavar="E", help="e.g. production; absent = unknown")
    business.add_argument("--priority", metavar="P", help="P0..P9; absent = unknown")
    business.add_argument("--business-category", metavar="B", help="e.g. payments; absent = unknown")
    business.add_argument(
        "--risk-tolerance",
        choices=list(resources.RISK_ORDER),
        default="low",
        help="highest riskLevel offered (default: low)",
    )
    serve.set_defaults(handler=mcp_serve)


def mcp_serve(args: argparse.Namespace) -> int:
    from aianalysis.mcp import server  # noqa: PLC0415  # the MCP SDK and uvicorn only for this command

    config = settings.from_env(provider="offline")
    options = server.ServerOptions(
        business=_business(args), max_chars=config.investigation.tool_output_max_chars
    )
    serve = functools.partial(
        server.serve_tools,
        options=options,
        transport=args.transport,
        host=args.host,
        port=args.port,
        token=config.mcp.token.get_secret_value() if config.mcp.token else None,
        tls=(
            server.Tls(cert_file=config.mcp.tls_cert_file, key_file=config.mcp.tls_key_file)
            if config.mcp.tls_cert_file and config.mcp.tls_key_file
            else None
        ),
        allow_plain_http=config.mcp.allow_plain_http,
    )
    if args.catalog:
        try:
            serve(catalog.load_paths(args.catalog))
        except errors.ConfigError as exc:
            print(f"aianalysis: error: {exc}", file=sys.stderr)
            return 1
        return 0
    try:
        with server.cluster_catalog() as index:
            serve(index)
    except (errors.ClusterError, errors.ConfigError) as exc:
        print(f"aianalysis: error: {exc}", file=sys.stderr)
        return 1
    return 0


# ---- aianalysis executor / approve -------------------------------------------------------------


def _add_executor(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser(
        "executor",
        help="run the executor: WorkflowExecutions of engine job become Jobs (a separate, opt-in process)",
    )
    _process_flags(run, verb="serve")
    run.set_defaults(handler=executor_run)


def executor_run(args: argparse.Namespace) -> int:
    config = settings.from_env()  # fail fast, before importing kopf, with a one-line message

    from aianalysis.executor import handlers  # noqa: PLC0415  # imports kopf: only for this command

    handlers.run(
        namespaces=args.namespace,
        log_format=config.observability.log_format,
        verbose=args.verbose,
    )
    return 0


def _add_show(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    show = commands.add_parser(
        "show",
        help="show an analysis' selection as you would approve or reject it, with the commands that do",
        description="Print what approving the analysis would run — its uid, target, workflow, version, "
        "image, spec digest, parameters, confidence, rationale and review reason — and the selection digest. "
        "`aianalysis approve` and `aianalysis reject` are bound to that uid and digest: an analysis deleted "
        "and created again under the same name, or a different selection, is refused.",
    )
    show.add_argument("name", help="the AIAnalysis")
    _namespace_flag(show)
    show.add_argument("-o", "--output", choices=("text", "json"), default="text")
    show.set_defaults(handler=show_analysis)


def show_analysis(args: argparse.Namespace) -> int:
    from aianalysis import kube  # noqa: PLC0415  # the Kubernetes client only for cluster commands
    from aianalysis.executor import submit  # noqa: PLC0415

    namespace = args.namespace or kube.current_namespace()
    with kube.api_client() as api:
        proposal = asyncio.run(submit.proposal(api, namespace=namespace, name=args.name))
    if isinstance(proposal, approval.Refuse):
        print(f"aianalysis: {proposal.message}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(_proposal_json(proposal), indent=2))
    else:
        print("\n".join(_proposal_lines(proposal)))
    return 0


def _namespace_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--namespace", default=None, help="default: the kubeconfig context's namespace")


def _binding_flags(parser: argparse.ArgumentParser, *, verb: str) -> None:
    bound = parser.add_argument_group(
        "what you reviewed (both, as `aianalysis show NAME` prints them; else you confirm on a terminal)"
    )
    bound.add_argument("--uid", help=f"the uid of the analysis you {verb}d")
    bound.add_argument("--digest", help="its selection digest (sha256:...)")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help=f"show what you would {verb}; change nothing",
    )


def _add_approve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    approve = commands.add_parser(
        "approve",
        help="approve an analysis' selected workflow: create its WorkflowExecution",
        description="Create the WorkflowExecution of the analysis' status.selectedWorkflow, approved by you "
        "(the user the API server authenticates; you need the verb 'approve' on workflowexecutions, e.g. "
        "the chart's approver ClusterRole). It shows what it approves and is bound to what you reviewed: "
        "on a terminal it asks you to confirm; otherwise pass --uid and --digest as `aianalysis show NAME` "
        "prints them. Refused when the analysis is not the one you reviewed (another uid: deleted and "
        "created again) or its selection is not (another digest), selected nothing, needs human review "
        "(unless --override-review names that very reason) or already has an execution (unless --again, "
        "after it ended).",
    )
    approve.add_argument("name", help="the AIAnalysis")
    _namespace_flag(approve)
    _binding_flags(approve, verb="approve")
    approve.add_argument(
        "--override-review",
        metavar="REASON",
        choices=typing.get_args(resources.HumanReviewReason),
        help="run it although the analysis needs human review for REASON (its humanReviewReason); "
        "refused when the analysis asks for review for another reason",
    )
    approve.add_argument(
        "--again", action="store_true", help="another execution after the previous one ended"
    )
    approve.set_defaults(handler=approve_analysis)


def approve_analysis(args: argparse.Namespace) -> int:
    from aianalysis import kube  # noqa: PLC0415  # the Kubernetes client only for cluster commands
    from aianalysis.executor import submit  # noqa: PLC0415

    namespace = args.namespace or kube.current_namespace()
    with kube.api_client() as api:
        decided = _bound(api, args, namespace=namespace, verb="approve")
        if isinstance(decided, int):
            return decided
        result = asyncio.run(
            submit.approve(
                api,
                namespace=namespace,
                name=args.name,
                bound=decided,
                override_review=args.override_review,
                again=args.again,
            )
        )
    return _submitted(result)


def _add_reject(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    reject = commands.add_parser(
        "reject",
        help="reject an analysis' selected workflow, with a reason: nothing runs",
        description="Record that you reject the analysis' status.selectedWorkflow, and why: a "
        "WorkflowRejection in your name (the API server admits it only from a user who may approve, the "
        "verb 'approve' on workflowexecutions, in their own name). Nothing runs; the operator shows it on "
        "the analysis (status.rejection) and the next analysis of the same target sees it, as it sees an "
        "ineffective verdict. Bound to what you reviewed, as approve is (--uid/--digest, or confirm on a "
        "terminal).",
    )
    reject.add_argument("name", help="the AIAnalysis")
    _namespace_flag(reject)
    reject.add_argument(
        "--reason", required=True, metavar="TEXT", help="why (your team and the next analysis read it)"
    )
    _binding_flags(reject, verb="reject")
    reject.set_defaults(handler=reject_analysis)


def reject_analysis(args: argparse.Namespace) -> int:
    from aianalysis import kube  # noqa: PLC0415  # the Kubernetes client only for cluster commands
    from aianalysis.executor import submit  # noqa: PLC0415

    if not args.reason.strip():
        print("aianalysis: error: --reason must say why", file=sys.stderr)
        return USAGE_ERROR
    namespace = args.namespace or kube.current_namespace()
    with kube.api_client() as api:
        decided = _bound(api, args, namespace=namespace, verb="reject")
        if isinstance(decided, int):
            return decided
        result = asyncio.run(
            submit.reject(api, namespace=namespace, name=args.name, bound=decided, reason=args.reason)
        )
    return _submitted(result)


def _submitted(result: submit.Submitted) -> int:
    """Print what ``submit.approve``/``submit.reject`` did (or why not); the exit code."""
    if result.created is None:
        print(f"aianalysis: refused: {result.message}", file=sys.stderr)
        return 1
    print(result.message)
    return 0


def _add_console(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    console = commands.add_parser(
        "console",
        help="a local web page to review, approve and reject analyses, as you (your kubeconfig)",
        description="Serve the review console on 127.0.0.1: incidents with their evidence, investigation "
        "audit, selection, alternatives, executions, verdicts and cost. Approve and Reject act as you, with "
        "your kubeconfig's credentials, through the same code as `aianalysis approve` and `reject`; the "
        "cluster sees no new identity. Open the URL it prints (it carries the session token).",
    )
    console.add_argument(
        "-n",
        "--namespace",
        action="append",
        default=None,
        help="namespaces to list (repeat; default: the context's)",
    )
    console.add_argument(
        "--address", default="127.0.0.1", help="listen address (default 127.0.0.1: this machine only)"
    )
    console.add_argument("--port", type=int, default=8765, help="listen port (0: any free one)")
    console.set_defaults(handler=console_serve)


def console_serve(args: argparse.Namespace) -> int:
    from aianalysis import kube  # noqa: PLC0415  # the Kubernetes client only for cluster commands

    try:
        from aianalysis import console  # noqa: PLC0415  # jinja2: the `console` extra
    except ModuleNotFoundError as exc:
        print(
            f"aianalysis: error: {exc}: install the console extra (aianalysis-operator[console])",
            file=sys.stderr,
        )
        return USAGE_ERROR
    namespaces = args.namespace or [kube.current_namespace()]
    with kube.api_client() as api:
        console.run_console(api, namespaces=namespaces, address=args.address, port=args.port)
    return 0


def _bound(api: Any, args: argparse.Namespace, *, namespace: str, verb: str) -> approval.Binding | int:
    """What the person reviewed (an ``approval.Binding``), or an exit code: the proposal is shown
    first; ``--uid``/``--digest`` bind to what they saw elsewhere, a terminal asks; anything else is
    refused (a script must pass what its person reviewed, never "whatever has that name now")."""
    from aianalysis.executor import submit  # noqa: PLC0415

    if (args.uid is None) != (args.digest is None):
        print(
            "aianalysis: error: --uid and --digest go together (as `aianalysis show` prints them)",
            file=sys.stderr,
        )
        return USAGE_ERROR
    proposal = asyncio.run(submit.proposal(api, namespace=namespace, name=args.name))
    if isinstance(proposal, approval.Refuse):
        print(f"aianalysis: refused: {proposal.message}", file=sys.stderr)
        return 1
    print("\n".join(_proposal_lines(proposal, commands=False)))
    if args.dry_run:
        print(f"dry run: nothing {verb}d; to {verb} exactly this: {_command(proposal, verb)}")
        return 0
    if args.uid is not None:
        return approval.Binding(uid=args.uid, digest=args.digest)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(
            f"aianalysis: refused: not a terminal, so nothing shows what you {verb}: review it with "
            f"`aianalysis show {args.name} -n {namespace}` and pass the --uid and --digest it prints",
            file=sys.stderr,
        )
        return USAGE_ERROR
    try:
        answer = input(f"{verb.capitalize()} this selection of aianalysis/{args.name}? [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        print(f"aianalysis: not {verb}d", file=sys.stderr)
        return 1
    return proposal.binding


def _command(proposal: approval.Proposal, verb: str) -> str:
    return proposal.approve_command() if verb == "approve" else proposal.reject_command()


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _printable(text: object) -> str:
    """Untrusted text (the LLM's rationale, names) for a terminal: no escape sequences, no bidi tricks."""
    return _CONTROL.sub("\N{REPLACEMENT CHARACTER}", str(text)).replace("\n", " / ")


def _proposal_lines(proposal: approval.Proposal, *, commands: bool = True) -> list[str]:
    target, workflow = proposal.target, proposal.workflow
    where = f"{target.namespace}/" if target.namespace else ""
    review = f"needs human review: {proposal.review_reason}" if proposal.review_reason else "none needed"
    params = [f"{_printable(k)}={_printable(v)}" for k, v in sorted(proposal.parameters.items())] or [
        "(none)"
    ]
    lines = [
        f"aianalysis/{_printable(proposal.name)} in namespace {_printable(proposal.namespace)}",
        f"  uid:          {_printable(proposal.uid)}",
        f"  target:       {_printable(target.kind)} {_printable(where + target.name)}",
        f"  workflow:     {_printable(workflow.workflow_id)} {_printable(workflow.version)}",
        f"  image:        {_printable(workflow.container_image or '(none)')}",
        f"  spec digest:  {_printable(workflow.spec_digest or '(none)')}",
        f"  parameters:   {params[0]}",
        *[f"                {p}" for p in params[1:]],
        f"  confidence:   {proposal.confidence}",
        f"  rationale:    {_printable(proposal.rationale)}",
        f"  review:       {review}",
        f"  digest:       {proposal.digest}",
    ]
    if commands:
        lines += [
            f"approve: {_printable(proposal.approve_command())}",
            f"reject:  {_printable(proposal.reject_command())}",
        ]
    return lines


def _proposal_json(proposal: approval.Proposal) -> dict[str, Any]:
    return {
        "namespace": proposal.namespace,
        "name": proposal.name,
        "uid": proposal.uid,
        "digest": proposal.digest,
        "target": proposal.target.wire(),
        "workflow": proposal.workflow.wire(),
        "parameters": dict(proposal.parameters),
        "confidence": proposal.confidence,
        "rationale": proposal.rationale,
        "reviewReason": proposal.review_reason,
        "commands": {"approve": proposal.approve_command(), "reject": proposal.reject_command()},
    }
