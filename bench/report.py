"""The printed summary of a bench run: one line per goal, then the details behind each figure."""

from __future__ import annotations

from typing import Any


def _mark(ok: bool) -> str:
    return "met" if ok else "MISSED"


def table(results: dict[str, Any]) -> str:
    rows: list[tuple[str, str, str, str]] = []
    details: list[str] = []
    if "overhead" in results:
        _overhead(results["overhead"], rows, details)
    if "concurrency" in results:
        for run in results["concurrency"]:
            rows.append(
                (
                    f"LLM-bound efficiency, cap {run['cap']} "
                    f"({run['analyses']} analyses, {run['reply_delay_s']:g} s/reply)",
                    f"{run['efficiency']:.0%} (ideal {run['ideal_s']:.1f} s / {run['measured_s']:.1f} s, "
                    f"max in flight {run['max_in_flight']})",
                    f">= {run['goal_min_efficiency']:.0%}",
                    _mark(run["efficiency"] >= run["goal_min_efficiency"]),
                )
            )
    if "search" in results:
        _search(results["search"], rows, details)
    if "growth" in results:
        _growth(results["growth"], details)
    if "memory" in results:
        mem = results["memory"]
        rows.append(
            (
                f"operator memory, {mem['workflows']:,} workflows + {mem['analyses']:,} analyses",
                f"RSS {mem['rss_end_mib']:.0f} MiB, peak {mem['hwm_mib']:.0f} MiB "
                f"(after catalog load {mem['rss_after_catalog_mib']:.0f} MiB)",
                f"<= {mem['goal_max_mib']} MB",
                _mark(mem["hwm_mib"] * 1.048576 <= mem["goal_max_mib"]),
            )
        )
        rows.append(
            (
                f"operator memory idle ({mem['idle_workflows']} workflows)",
                f"RSS {mem['rss_idle_mib']:.0f} MiB",
                f"<= {mem.get('goal_idle_max_mib', 90)} MB",
                _mark(mem["rss_idle_mib"] * 1.048576 <= mem.get("goal_idle_max_mib", 90)),
            )
        )
        rows.append(
            (
                f"operator start -> {mem['workflows']:,}-workflow catalog loaded (-> ready)",
                f"{mem['startup_s']} s ({mem.get('ready_s', '?')} s)",
                f"<= {mem.get('goal_startup_max_s', 10)} s",
                _mark(mem["startup_s"] <= mem.get("goal_startup_max_s", 10)),
            )
        )
        details.append(
            f"memory: {mem['workflows']:,} workflows created in {mem['create_workflows_s']} s; "
            f"catalog adds {mem['rss_after_catalog_mib'] - mem['rss_idle_mib']:.0f} MiB to the idle operator"
            + (f"; {mem['kib_per_analysis']} KiB per analysis" if "kib_per_analysis" in mem else "")
        )
        for step in mem.get("steps", []):
            again = " (another burst, after the steps)" if step.get("repeat") else ""
            details.append(
                f"  {step['analyses']:>6,} analyses{again}: RSS {step['rss_mib']:.0f} MiB, "
                f"peak {step['hwm_mib']:.0f} MiB, {step['per_second']:.1f} analyses/s in this step"
            )
    if "storm" in results:
        _storm(results["storm"], rows, details)
    if "investigation" in results:
        _investigation(results["investigation"], rows, details)
    if "caching" in results:
        cache = results["caching"]
        rows.append(
            (
                f"first request cacheable ({cache['incidents']} example incidents)",
                f"{cache['share_median']:.0%} median, {cache['share_min']:.0%} min "
                f"({cache['prefix_tokens']:,} of ~{cache['total_tokens_median']:,.0f} tokens)",
                f">= {cache['goal_min_share']:.0%}",
                _mark(cache["share_min"] >= cache["goal_min_share"]),
            )
        )
        details.append(
            f"caching: tokens ~ {cache['token_estimate']}; the cached prefix (tools + system) is "
            f"{cache['prefix_tokens']:,} tokens, above the {cache['min_cacheable_tokens']:,}-token minimum"
            if cache["prefix_tokens"] >= cache["min_cacheable_tokens"]
            else f"caching: prefix {cache['prefix_tokens']} tokens is BELOW the API's minimum"
        )
    return _format(rows, results) + "\n\n" + "\n".join(details)


def _investigation(data: dict[str, Any], rows: list[tuple[str, str, str, str]], details: list[str]) -> None:
    rows.append(
        (
            f"input tokens per investigated incident ({len(data['incidents'])} incidents, real tools)",
            f"{data['median_input_tokens']:,.0f} median, {data['cache_share']:.0%} cache reads",
            f"<= {data['goal_median_tokens']:,} with >= {data['goal_cache_share']:.0%} cached",
            _mark(
                data["median_input_tokens"] <= data["goal_median_tokens"]
                and data["min_cache_share"] >= data["goal_cache_share"]
            ),
        )
    )
    for incident in data["incidents"]:
        details.append(
            f"investigation {incident['incident']}: {incident['requests']} requests, "
            f"{incident['input_tokens']:,} input tokens ({incident['cached_share']:.0%} cached; "
            f"tools + system {incident['static_prefix_tokens']:,} per request); tool output per call: "
            + ", ".join(incident["tool_calls"])
        )
    details.append(
        f"investigation: tool-output tokens per call median {data['tool_output_tokens_per_call_median']:g}, "
        f"max {data['tool_output_tokens_per_call_max']}; tokens ~ {data['token_estimate']}"
    )


def _overhead(data: dict[str, Any], rows: list[tuple[str, str, str, str]], details: list[str]) -> None:
    median = data["median_s"]
    label = f"{data['analyses']} analyses, concurrency {data['concurrency']}, median of {data['rounds']}"
    for kind, ratio in (("scripted", data["ratio_scripted"]), ("offline", data["ratio_offline"])):
        provider = "scripted LLM" if kind == "scripted" else "offline provider"
        rows.append(
            (
                f"operator overhead, {provider} ({label})",
                f"{ratio:.2f}x ({median[kind]:.1f} s vs floor {median['floor']:.1f} s)",
                f"<= {data['goal_max_ratio']:.1f}x",
                _mark(ratio <= data["goal_max_ratio"]),
            )
        )
    count = data["analyses"]
    details.append(
        f"overhead: LLM requests per analysis (scripted runs): {data['requests_per_analysis']} "
        f"(2 = search + submit; more = conversations run twice)"
    )
    details.append("overhead runs (in run order; CPU in ms per analysis; API requests per analysis):")
    runs = [("floor", r) for r in data["floor"]] + [("scripted", r) for r in data["operator_scripted"]]
    runs += [("offline", r) for r in data["operator_offline"]]
    for kind, run in sorted(runs, key=lambda pair: pair[1]["order"]):
        cpu = ", ".join(f"{k} {v * 1000 / count:.1f}" for k, v in run["cpu_s"].items())
        calls = ", ".join(f"{k} {v:g}" for k, v in run["requests_per_analysis"].items() if v >= 0.05)
        details.append(
            f"  {kind:<8} {run['seconds']:6.2f} s  latency p50 {run['latency_ms']['p50']:.0f} ms "
            f"p99 {run['latency_ms']['p99']:.0f} ms  pickup p50 {run['pickup_ms']['p50']:.0f} ms  "
            f"cpu: {cpu}  api: {calls}  analysed twice: {run['analysed_twice']}"
        )


def _search(rows_in: list[dict[str, Any]], rows: list[tuple[str, str, str, str]], details: list[str]) -> None:
    details.append("catalog search (ms):  workflows  profile    p50      p99   hits")
    for row in rows_in:
        details.append(
            f"  {row['workflows']:>25,}  {row['profile']:<9} {row['p50_ms']:7.3f}  {row['p99_ms']:7.3f}  "
            f"{row['mean_hits']:5}"
        )
    largest = max(row["workflows"] for row in rows_in)
    at_largest = [row for row in rows_in if row["workflows"] == largest]
    worst = max(at_largest, key=lambda row: row["p50_ms"])
    worst_p99 = max(row["p99_ms"] for row in at_largest)
    rows.append(
        (
            f"catalog search p50 / p99 at {largest:,} workflows (worst profile: {worst['profile']})",
            f"{worst['p50_ms']:.2f} ms / {worst_p99:.2f} ms",
            "<= 5 ms / <= 20 ms" if largest >= 10_000 else "(at 10,000)",
            _mark(worst["p50_ms"] <= 5.0 and worst_p99 <= 20.0) if largest >= 10_000 else "-",
        )
    )


def _growth(data: dict[str, Any], details: list[str]) -> None:
    imports = data["imports"]
    details.append(
        f"growth: the operator's imports {imports['imports_mib']:.0f} MiB ({imports['modules']} modules, "
        f"{imports['imports_s']} s) on a {imports['python_mib']:.0f} MiB interpreter"
    )
    details.append("  workflows  catalog MiB  KiB/workflow  load s  typical p50/p99 ms  text-only p50/p99 ms")
    for row in data["catalog"]:
        details.append(
            f"  {row['workflows']:>9,}  {row['catalog_mib']:>11.1f}  {row['kib_per_workflow']:>12.2f}  "
            f"{row['load_s']:>6.1f}  {row['typical_p50_ms']:>8.2f} / {row['typical_p99_ms']:<7.2f}  "
            f"{row['text_only_p50_ms']:>8.2f} / {row['text_only_p99_ms']:.2f}"
        )


def _storm(data: dict[str, Any], rows: list[tuple[str, str, str, str]], details: list[str]) -> None:
    keys = data["incident_keys"]
    label = f"alert storm, {data['alerts']:,} alerts over {keys} incident keys"
    rows.append(
        (
            f"{label}: analyses created",
            str(data["analyses_created"]),
            f"= {data['goal_analyses']}",
            _mark(data["analyses_created"] == data["goal_analyses"]),
        )
    )
    rows.append(
        (
            f"{label}: LLM conversations",
            f"{data['conversations']:g}",
            f"= {data['goal_conversations']}",
            _mark(data["conversations"] == data["goal_conversations"]),
        )
    )
    rows.append(
        (
            f"{label}: intake answer p50 / p99 (bare aiohttp endpoint, same payloads)",
            f"{data['intake_p50_ms']:.1f} / {data['intake_p99_ms']:.1f} ms "
            f"({data['floor_p50_ms']:.1f} / {data['floor_p99_ms']:.1f} ms)",
            "",
            "",
        )
    )
    rows.append(
        (
            f"{label}: accepted alerts/s, {data['senders']} senders (bare endpoint)",
            f"{data['accepted_alerts_per_s']:,.0f} ({data['floor_alerts_per_s']:,.0f})",
            "",
            "",
        )
    )
    details.append(
        f"storm: {data['payloads']} payloads, {data['accepted_payloads']} accepted; "
        f"outcomes {data['outcomes']}; occurrences recorded {data['occurrences_total']}; "
        f"all processed {data['processed_s']} s after the last post"
    )


def _format(rows: list[tuple[str, str, str, str]], results: dict[str, Any]) -> str:
    header = ("benchmark", "figure", "goal", "")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    lines = [
        f"bench ({results['mode']}, {results['cpus']} CPUs, load {results['load_before'][0]:.1f} -> "
        f"{results.get('load_after', [0])[0]:.1f}, {results.get('seconds', 0)} s)",
        "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)),
        "  ".join("-" * w for w in widths),
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)
