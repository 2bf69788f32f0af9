"""pytest-benchmark plumbing: same-run ratios against the raw baselines, in the JSON and printed.

Every state benchmark records `kind`, `variant`, `op` and `units` in extra_info; every baseline
records variant "raw". After the run, each state benchmark's rate (units / median seconds) is
divided by its baseline's rate from the same run, because only same-run ratios mean anything on
these noisy machines. The ratios go into the saved JSON under "statebench_ratios".
"""

from __future__ import annotations

from typing import Any

import pytest


def _info(bench: Any) -> dict:
    return bench.extra_info if hasattr(bench, "extra_info") else bench.get("extra_info", {})


def _rates(benchmarks: list[Any]) -> dict[tuple[str, str, str], dict[str, float]]:
    """Rates of the op benchmarks (state and raw); others (paired targets, runner, snapshot
    benchmarks) carry their own numbers and are skipped here."""
    out = {}
    for bench in benchmarks:
        info = _info(bench)
        if not {"op", "units", "kind", "variant"} <= set(info):
            continue
        stats = bench.stats if hasattr(bench, "stats") else bench["stats"]
        median = getattr(stats, "median", None) or stats["median"]
        q1 = getattr(stats, "q1", None) or stats["q1"]
        q3 = getattr(stats, "q3", None) or stats["q3"]
        units = info["units"]
        out[(info["kind"], info["variant"], info["op"])] = {
            "rate": units / median,
            "rate_q1": units / q3,  # slower quartile of time -> lower rate
            "rate_q3": units / q1,
        }
    return out


def statebench_ratios(benchmarks: list[Any]) -> list[dict[str, Any]]:
    rates = _rates(benchmarks)
    rows = []
    for (kind, variant, op), r in sorted(rates.items()):
        if variant == "raw":
            continue
        base = rates.get((kind, "raw", op))
        if base is None:
            continue
        rows.append({
            "kind": kind, "variant": variant, "op": op,
            "rate_per_s": round(r["rate"]), "raw_rate_per_s": round(base["rate"]),
            "ratio": round(r["rate"] / base["rate"], 3),
            "ratio_spread": [round(r["rate_q1"] / base["rate_q3"], 3),
                             round(r["rate_q3"] / base["rate_q1"], 3)],
        })
    return rows


def paired_targets(benchmarks: list[Any]) -> list[dict[str, Any]]:
    """The paired same-run ratios of test_bench_targets.py, as recorded in extra_info."""
    return [dict(_info(b)) for b in benchmarks if "ratio_median" in _info(b)]


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(config: Any, benchmarks: Any, output_json: dict) -> None:
    saved = output_json.get("benchmarks", [])
    output_json["statebench_ratios"] = statebench_ratios(saved)
    output_json["statebench_targets"] = paired_targets(saved)


def _perop_summary(tr: Any, benchmarks: list[Any]) -> None:
    """The per-op suite's table (test_bench_flink.py): medians, intervals, unstable flags and
    verdicts, as `python -m bench.perop run` prints them."""
    from bench.perop import format_document

    for bench in benchmarks:
        doc = _info(bench).get("perop")
        if doc:
            tr.section("statebench vs Flink: per-op rates and TTL's relative cost")
            for line in format_document(doc):
                tr.write_line(line)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    _perop_summary(terminalreporter, session.benchmarks)
    rows = statebench_ratios(session.benchmarks)
    if not rows:
        return
    tr = terminalreporter
    tr.section("statebench: rate vs raw baseline (same run; median, IQR-derived spread)")
    tr.write_line(f"{'backend':8} {'variant':9} {'op':14} {'ops/s':>12} {'raw ops/s':>12} "
                  f"{'ratio':>6}  spread")
    for r in rows:
        tr.write_line(
            f"{r['kind']:8} {r['variant']:9} {r['op']:14} {r['rate_per_s']:>12,} "
            f"{r['raw_rate_per_s']:>12,} {r['ratio']:>6.2f}  "
            f"{r['ratio_spread'][0]:.2f}-{r['ratio_spread'][1]:.2f}"
        )
