"""``python -m workloads.spark_throughput SPEC``: what a record and a micro-batch cost Spark's
``transformWithState`` with the spark-tws lane's own processor, in Spark's own numbers.

Why a mode of its own: the paced lane's records/s is whatever the clock's batches happened to
be, so the same code gives rates an order of magnitude apart on a quiet and on a loaded
machine, and it cannot say how much of a batch is Spark's fixed cost. Here the spec's events
are staged up front in files of fixed row counts, one file per micro-batch
(``backends.spark.throughput``), the warm-up batches are dropped, and each steady batch's
``triggerExecution`` (and ``addBatch``) from Spark's ``StreamingQueryListener`` is fitted
against its rows: ``duration = per_batch + per_row * rows``, both with 95% t intervals
(:func:`fit_line`). Variants of the processor (no state, extra state reads, the same operations
in a JVM ``StatefulProcessor``) say what share of a record's cost is the Python worker's; those
shares get percentile intervals from a bootstrap over each query's batches
(:func:`bootstrap_interval`).

Bad input is one line on stderr (exit 2) before any work; the staged files and checkpoints
live in one owner-tagged temporary folder removed at the end, and the Spark session started
here is stopped.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

CONFIDENCE = 0.95
DEFAULT_STRATEGIES = ("spark_no_ttl", "spark_ttl")
#: The lane whose processor, state and refusals the mode takes.
LANE = "spark-tws"


# ------------------------------------------------------------------------------------------------
# The fit
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LineFit:
    """``duration_ms = per_batch_ms + per_row_ms * rows`` over a query's steady batches."""

    per_batch_ms: float
    per_batch_ci: tuple[float, float]
    per_row_ms: float
    per_row_ci: tuple[float, float]
    batches: int
    #: residuals' standard deviation (ms), on batches - 2 degrees of freedom
    residual_sd_ms: float
    confidence: float = CONFIDENCE

    @property
    def rows_per_s(self) -> float:
        """The per-row cost as a rate (what a batch large enough to hide its fixed cost gets)."""
        return 1000.0 / self.per_row_ms if self.per_row_ms > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["per_batch_ci"], out["per_row_ci"] = list(self.per_batch_ci), list(self.per_row_ci)
        return out


def fit_line(rows: Sequence[float], durations_ms: Sequence[float],
             confidence: float = CONFIDENCE) -> LineFit:
    """Ordinary least squares of duration on rows, with Student-t intervals on both
    coefficients (the batches' errors taken as independent with one spread). Needs at least
    three batches and two distinct row counts; raises ``ValueError`` otherwise."""
    from workloads.results.tdist import t_quantile

    x = np.asarray(rows, dtype=np.float64)
    y = np.asarray(durations_ms, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("rows and durations must be two sequences of one length")
    n = len(x)
    if n < 3:
        raise ValueError(f"a line through batches needs at least 3 batches, got {n}")
    if len(np.unique(x)) < 2:
        raise ValueError("a line through batches needs at least two different batch sizes")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    design = np.column_stack([np.ones(n), x])
    beta, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ beta
    dof = n - 2
    s2 = float(resid @ resid) / dof
    cov = s2 * np.linalg.inv(design.T @ design)
    t = t_quantile(0.5 + confidence / 2, dof)
    se_a, se_b = math.sqrt(max(cov[0, 0], 0.0)), math.sqrt(max(cov[1, 1], 0.0))
    a, b = float(beta[0]), float(beta[1])
    return LineFit(per_batch_ms=a, per_batch_ci=(a - t * se_a, a + t * se_a),
                   per_row_ms=b, per_row_ci=(b - t * se_b, b + t * se_b),
                   batches=n, residual_sd_ms=math.sqrt(s2), confidence=confidence)


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    xm = x.mean()
    denom = float(((x - xm) ** 2).sum())
    return float(((x - xm) * (y - y.mean())).sum()) / denom if denom else math.nan


def bootstrap_interval(samples: Sequence[tuple[Sequence[float], Sequence[float]]],
                       statistic: Callable[[list[float]], float], draws: int = 2000,
                       confidence: float = CONFIDENCE, seed: int = 0) -> tuple[float, float]:
    """A percentile interval of ``statistic(per_row of each sample)``, each sample's batches
    resampled with replacement (a pairs bootstrap: it needs no equal spread across sizes). A
    draw whose resample has one batch size only is drawn again."""
    rng = np.random.default_rng(seed)
    arrays = [(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
              for x, y in samples]
    values = []
    for _ in range(draws):
        slopes = []
        for x, y in arrays:
            for _attempt in range(100):
                pick = rng.integers(0, len(x), len(x))
                if len(np.unique(x[pick])) > 1:
                    break
            slopes.append(_slope(x[pick], y[pick]))
        values.append(statistic(slopes))
    arr = np.asarray(values)
    arr = arr[np.isfinite(arr)]
    if not len(arr):
        return (math.nan, math.nan)
    tail = (1 - confidence) / 2 * 100
    return float(np.percentile(arr, tail)), float(np.percentile(arr, 100 - tail))


# ------------------------------------------------------------------------------------------------
# Input
# ------------------------------------------------------------------------------------------------


class UsageError(ValueError):
    """Bad input: the message is the one line the user sees."""


def _ints(text: str, what: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"{what} must be comma-separated whole numbers, got {text!r}") from None
    if not values or min(values) < 1:
        raise UsageError(f"{what} must be positive whole numbers, got {text!r}")
    return values


def _names(text: str, known: Sequence[str], what: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in known]
    if not names or unknown:
        raise UsageError(f"{what} {', '.join(unknown) or repr(text)}: known are "
                         f"{', '.join(known)}")
    return list(dict.fromkeys(names))


@dataclass(frozen=True)
class Settings:
    """One command's checked input."""

    spec: Any
    batch_rows: tuple[int, ...]
    batches: int
    warm_up: int
    strategies: tuple[str, ...]
    variants: tuple[str, ...]
    extra_reads: int
    ttl_ms: int | None
    parallelism: int
    changelog: bool
    seed: int
    json_path: Path | None
    master: str
    timeout_s: float

    def plan(self) -> list[int]:
        """Rows of every micro-batch of each query (``backends.spark.throughput.batch_plan``)."""
        from backends.spark.throughput import batch_plan

        return batch_plan(self.batch_rows, self.batches, self.warm_up, self.seed)

    @property
    def events(self) -> int:
        return sum(self.plan())


def parser() -> argparse.ArgumentParser:
    from backends.spark.throughput import (
        DEFAULT_BATCH_ROWS,
        DEFAULT_BATCHES,
        DEFAULT_EXTRA_READS,
        DEFAULT_WARM_UP,
        VARIANTS,
    )

    p = argparse.ArgumentParser(
        prog="python -m workloads.spark_throughput",
        description="Per-row and per-batch cost of the spark-tws processor on pre-staged input "
                    "in fixed batch sizes (Spark's own batch durations, fitted against rows).")
    p.add_argument("spec", help="a key-value spec: a shipped name (sessions-churn) or a path")
    p.add_argument("--batch-rows", default=",".join(map(str, DEFAULT_BATCH_ROWS)),
                   help="rows per micro-batch, comma-separated (at least two sizes; default "
                        "%(default)s)")
    p.add_argument("--batches", type=int, default=DEFAULT_BATCHES,
                   help="measured batches per size (default %(default)s)")
    p.add_argument("--warm-up", type=int, default=DEFAULT_WARM_UP,
                   help="batches dropped at each query's start (default %(default)s)")
    p.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES),
                   help="spark_no_ttl and/or spark_ttl (default %(default)s)")
    p.add_argument("--variants", default="python",
                   help=f"processors, comma-separated: {', '.join(VARIANTS)} (default "
                        "%(default)s)")
    p.add_argument("--extra-reads", type=int, default=DEFAULT_EXTRA_READS,
                   help="state reads added per record by the *-reads variants (default "
                        "%(default)s)")
    p.add_argument("--ttl-ms", type=int, default=None,
                   help="spark_ttl's TTL in wall ms (default: the spec's state.ttl_ms)")
    p.add_argument("--parallelism", type=int, default=2,
                   help="shuffle partitions of the stateful operator (default %(default)s)")
    p.add_argument("--no-changelog", action="store_true",
                   help="RocksDB changelog checkpointing off (spark-tws-nochangelog)")
    p.add_argument("--seed", type=int, default=0, help="order of the sizes in each round")
    p.add_argument("--json", dest="json_path", default=None, help="also write the figures here")
    p.add_argument("--master", default="local[2]", help="Spark master (default %(default)s)")
    p.add_argument("--timeout-s", type=float, default=900.0,
                   help="give a query up after this many seconds (default %(default)s)")
    return p


def check(args: argparse.Namespace) -> Settings:
    """The arguments as :class:`Settings`, or :class:`UsageError` naming the first problem."""
    from backends.spark.throughput import VARIANTS
    from workloads.run.plan import PlanError, RunConfig, plan_scenarios
    from workloads.spec import SpecError, load_spec

    rows = sorted(set(_ints(args.batch_rows, "--batch-rows")))
    if len(rows) < 2:
        raise UsageError("--batch-rows needs at least two different sizes: a line through one "
                         "size has no slope")
    if args.batches < 2:
        raise UsageError(f"--batches must be at least 2 (per size), got {args.batches}")
    if args.warm_up < 0:
        raise UsageError(f"--warm-up must be 0 or more, got {args.warm_up}")
    strategies = _names(args.strategies, DEFAULT_STRATEGIES, "--strategies")
    variants = _names(args.variants, VARIANTS, "--variants")
    if args.extra_reads < 1:
        raise UsageError(f"--extra-reads must be at least 1, got {args.extra_reads}")
    if args.parallelism < 1:
        raise UsageError(f"--parallelism must be at least 1, got {args.parallelism}")
    if args.ttl_ms is not None and args.ttl_ms < 1:
        raise UsageError(f"--ttl-ms must be at least 1, got {args.ttl_ms}")
    if not args.timeout_s > 0:
        raise UsageError(f"--timeout-s must be positive, got {args.timeout_s}")
    json_path = Path(args.json_path) if args.json_path else None
    if json_path is not None and (json_path.is_dir() or not json_path.parent.is_dir()):
        raise UsageError(f"--json {json_path}: not a file in an existing folder")
    try:
        spec = load_spec(args.spec)
        if args.ttl_ms is not None:
            spec = spec.with_overrides(ttl_ms=args.ttl_ms)
    except SpecError as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    if spec.time is None:
        raise UsageError(f"{spec.name} is a trace; the throughput mode generates a spec's "
                         "events (give a generated key-value spec)")
    ttl = spec.state.ttl_ms
    try:  # the planner asks the spark-tws lane, as for a run at speed-up 1
        run = RunConfig(spec=spec, backends=(LANE,), strategies=tuple(strategies),
                        parallelism=args.parallelism, time_speedup=1.0)
        _, refused = plan_scenarios(run)
    except PlanError as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    if refused:
        raise UsageError(refused[0].reason)
    if any(v.startswith("jvm") for v in variants):
        from backends.spark.jvm_processor import jvm_problem

        problem = jvm_problem()
        if problem is not None:
            raise UsageError(problem)
    return Settings(spec=spec, batch_rows=tuple(rows), batches=args.batches,
                    warm_up=args.warm_up, strategies=tuple(strategies),
                    variants=tuple(variants), extra_reads=args.extra_reads, ttl_ms=ttl,
                    parallelism=args.parallelism, changelog=not args.no_changelog,
                    seed=args.seed, json_path=json_path, master=args.master,
                    timeout_s=args.timeout_s)


def spec_events(spec: Any, events: int, parallelism: int) -> Any:
    """``events`` of the spec as the lane's query reads them (``key, ord, op, v, mk``, in the
    order statebench's tasks read them): ``workloads.lanes.spark_tws.lane_events``' table."""
    import pyarrow as pa

    from workloads.generator import DEFAULT_BATCH_SIZE
    from workloads.payloads import PayloadColumn
    from workloads.run.config import DEFAULT_MAX_PARALLELISM
    from workloads.run.source import keyed_table

    scaled = spec.with_overrides(events=events)
    table = keyed_table(scaled, parallelism, parallelism, DEFAULT_MAX_PARALLELISM,
                        DEFAULT_BATCH_SIZE)
    table = table.sort_by([("ts", "ascending"), ("seq", "ascending")]).combine_chunks()
    value_type = spec.values.type
    vtype = {"long": pa.int64(), "string": pa.string(), "bytes": pa.binary()}[value_type]
    values = PayloadColumn(value_type).values(
        table.select(["value", "value_size"]).to_batches()[0])
    return pa.table({
        "key": table.column("key").cast(pa.int64()),
        "ord": pa.array(np.arange(table.num_rows, dtype=np.int64)),
        "op": table.column("op").cast(pa.int8()),
        "v": pa.array(values, vtype),
        "mk": table.column("map_key").cast(pa.int32()),
    })


def processor_for(settings: Settings, strategy: str) -> Any:
    """The lane's processor settings (``workloads.lanes.spark_tws.processor_settings``)."""
    from backends.spark.tws import SPARK_STATE_TYPES, ProcessorSettings
    from backends.strategies import SPARK_TTL, strategy_of_label
    from workloads.ops import Op
    from workloads.run.plan import state_types_of

    return ProcessorSettings(
        state_types=tuple(s for s in state_types_of(settings.spec) if s in SPARK_STATE_TYPES),
        value_type=settings.spec.values.type,
        op_codes=tuple((op.spec_name, int(op)) for op in Op),
        ttl_ms=settings.ttl_ms if strategy_of_label(strategy) is SPARK_TTL else None)


# ------------------------------------------------------------------------------------------------
# Run and report
# ------------------------------------------------------------------------------------------------


@dataclass
class Measured:
    """One query's figures and its fits."""

    figures: Any  # backends.spark.throughput.QueryFigures
    trigger_fit: LineFit | None
    add_batch_fit: LineFit | None

    def samples(self) -> tuple[list[float], list[float]]:
        steady = self.figures.steady()
        return [b.rows for b in steady], [b.trigger_ms for b in steady]

    def to_dict(self) -> dict[str, Any]:
        out = self.figures.to_dict()
        out["trigger_fit"] = self.trigger_fit.to_dict() if self.trigger_fit else None
        out["add_batch_fit"] = self.add_batch_fit.to_dict() if self.add_batch_fit else None
        return out


def fit_figures(figures: Any) -> Measured:
    """Both fits of one query's steady batches (none, with a note, when they cannot be made)."""
    steady = figures.steady()
    rows = [b.rows for b in steady]
    try:
        return Measured(figures, fit_line(rows, [b.trigger_ms for b in steady]),
                        fit_line(rows, [b.add_batch_ms for b in steady]))
    except ValueError as exc:
        figures.notes.append(f"no fit: {exc}")
        return Measured(figures, None, None)


@dataclass(frozen=True)
class Share:
    """A quantity derived from several queries' per-row costs, with a bootstrap interval."""

    name: str
    strategy: str
    value: float
    ci: tuple[float, float]
    unit: str
    meaning: str


def derived(measured: Sequence[Measured], extra_reads: int) -> list[Share]:
    """What the variants say about the Python worker, per strategy (only what was run)."""
    out: list[Share] = []
    by = {(m.figures.variant, m.figures.strategy): m for m in measured if m.trigger_fit}

    def add(name: str, strategy: str, variants: Sequence[str],
            fn: Callable[[list[float]], float], unit: str, meaning: str) -> None:
        ms = [by.get((v, strategy)) for v in variants]
        if any(m is None for m in ms):
            return
        point = fn([m.trigger_fit.per_row_ms for m in ms])  # type: ignore[union-attr]
        ci = bootstrap_interval([m.samples() for m in ms], fn)  # type: ignore[union-attr]
        out.append(Share(name, strategy, point, ci, unit, meaning))

    k = float(extra_reads)
    for strategy in sorted({m.figures.strategy for m in measured}):
        add("python_worker_share", strategy, ("python", "jvm"),
            lambda s: 1 - s[1] / s[0], "share",
            "of a Python record's per-row cost that the JVM processor does not pay "
            "(the Python worker: rows to and from it, its code, its state round trips)")
        add("state_calls_share", strategy, ("python", "python-nostate"),
            lambda s: 1 - s[1] / s[0], "share",
            "of a Python record's per-row cost spent in its state calls")
        add("python_state_call_us", strategy, ("python", "python-reads"),
            lambda s: (s[1] - s[0]) / k * 1000, "us",
            "one more state read from Python (one round trip to the state server)")
        add("jvm_state_call_us", strategy, ("jvm", "jvm-reads"),
            lambda s: (s[1] - s[0]) / k * 1000, "us", "one more state read in the JVM")
    return out


def _ci(lo: float, hi: float, digits: int) -> str:
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def table(measured: Sequence[Measured], shares: Sequence[Share]) -> str:
    """The command's printed table."""
    head = (f"{'variant':<15} {'strategy':<13} {'batches':>7} {'per batch ms':>12} "
            f"{'95% CI':>18} {'per row us':>10} {'95% CI':>18} {'rows/s':>8} "
            f"{'addBatch us/row':>15} {'resid ms':>8} {'load':>5}")
    lines = [head, "-" * len(head)]
    for m in measured:
        f, fit, add = m.figures, m.trigger_fit, m.add_batch_fit
        if fit is None or add is None:
            lines.append(f"{f.variant:<15} {f.strategy:<13} {len(f.steady()):>7} "
                         f"{'; '.join(f.notes)}")
            continue
        lines.append(
            f"{f.variant:<15} {f.strategy:<13} {fit.batches:>7} {fit.per_batch_ms:>12.0f} "
            f"{_ci(*fit.per_batch_ci, 0):>18} {fit.per_row_ms * 1000:>10.1f} "
            f"{_ci(fit.per_row_ci[0] * 1000, fit.per_row_ci[1] * 1000, 1):>18} "
            f"{fit.rows_per_s:>8.0f} {add.per_row_ms * 1000:>15.1f} "
            f"{fit.residual_sd_ms:>8.0f} {f.load_average[0]:>5.1f}")
    for m in measured:
        for note in m.figures.notes:
            lines.append(f"note ({m.figures.variant}, {m.figures.strategy}): {note}")
    for s in shares:
        digits = 3 if s.unit == "share" else 1
        lines.append(f"{s.name} ({s.strategy}): {s.value:.{digits}f} {s.unit} "
                     f"{_ci(*s.ci, digits)}: {s.meaning}")
    return "\n".join(lines)


def warm_session(spark: Any, listener: Any, work: Path, schema: Any, plan: Sequence[int],
                 settings: Settings, jvm: Any, say: Callable[[str], None]) -> None:
    """One unmeasured query per processor kind (Python, JVM) over the warm-up batches' files,
    before the measured ones: the session's first query also pays for starting its Python
    workers and compiling Spark's own code, which the first measured query would otherwise
    carry beyond its dropped batches while the later ones do not."""
    from backends.spark.throughput import run_variant

    count = settings.warm_up
    if not count:
        return
    folder = work / "warm-up-input"
    folder.mkdir()
    for path in sorted((work / "input").iterdir())[:count]:
        try:
            os.link(path, folder / path.name)
        except OSError:  # another filesystem: a copy, its time kept
            import shutil

            shutil.copy2(path, folder / path.name)
    kinds = [v for v in ("python", "jvm") if any(x.startswith(v) for x in settings.variants)]
    for kind in kinds:
        say(f"spark_throughput: warming the session up ({kind}, {count} batches, not measured)")
        run_variant(spark, listener, folder, schema, plan[:count], count, kind,
                    settings.strategies[0], processor_for(settings, settings.strategies[0]),
                    work / f"checkpoint-warm-up-{kind}", changelog=settings.changelog,
                    partitions=settings.parallelism, jvm=jvm, timeout_s=settings.timeout_s)


def measure(settings: Settings, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Stage the events, run every strategy x variant query on one session, fit them; the
    figures as a dict that is JSON once its two object entries, ``_measured`` and ``_shares``
    (what the table prints), are popped. The session is this process's: the caller stops
    it."""
    from backends import tempdirs
    from backends.spark.listener import recording
    from backends.spark.throughput import run_variant, stage_files
    from workloads.run.engines.spark_session import get_session

    plan = settings.plan()
    load_start = os.getloadavg()
    events = spec_events(settings.spec, sum(plan), settings.parallelism)
    if events.num_rows < sum(plan):
        raise UsageError(f"{settings.spec.name} generated {events.num_rows:,} events; the "
                         f"plan needs {sum(plan):,}")
    spark = get_session(settings.master, app_name="statebench-spark-throughput")
    jvm = None
    if any(v.startswith("jvm") for v in settings.variants):
        from backends.spark.jvm_processor import JvmProcessor

        jvm = JvmProcessor.load(spark)
    measured: list[Measured] = []
    with recording(spark) as listener, tempdirs.temp_dir("statebench-spark-throughput-") as tmp:
        work = Path(tmp)
        stage_files(events, plan, work / "input")
        warm_session(spark, listener, work, events.schema, plan, settings, jvm, say)
        for strategy in settings.strategies:
            processor = processor_for(settings, strategy)
            for variant in settings.variants:
                say(f"spark_throughput: {variant} {strategy}: {len(plan)} batches, "
                    f"{sum(plan):,} events (load average {os.getloadavg()[0]:.2f})")
                figures = run_variant(
                    spark, listener, work / "input", events.schema, plan,
                    settings.warm_up, variant, strategy, processor,
                    work / f"checkpoint-{variant}-{strategy}",
                    changelog=settings.changelog, partitions=settings.parallelism,
                    extra_reads=settings.extra_reads, jvm=jvm,
                    timeout_s=settings.timeout_s)
                measured.append(fit_figures(figures))
    shares = derived(measured, settings.extra_reads)
    return {
        "spec": settings.spec.name, "plan": plan, "warm_up": settings.warm_up,
        "batch_rows": list(settings.batch_rows), "batches_per_size": settings.batches,
        "ttl_ms": settings.ttl_ms, "parallelism": settings.parallelism,
        "changelog": settings.changelog, "extra_reads": settings.extra_reads,
        "confidence": CONFIDENCE, "load_average_start": list(load_start),
        "load_average_end": list(os.getloadavg()),
        "queries": [m.to_dict() for m in measured],
        "derived": [asdict(s) for s in shares],
        "_measured": measured, "_shares": shares,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings = check(args)
    except UsageError as exc:
        print(f"spark_throughput: {exc}", file=sys.stderr)
        return 2
    from workloads.errors import first_line

    try:
        result = measure(settings, say=lambda line: print(line, file=sys.stderr))
    except UsageError as exc:
        print(f"spark_throughput: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # Spark's errors: one line; the traceback says nothing more here
        print(f"spark_throughput: {type(exc).__name__}: {first_line(exc)}", file=sys.stderr)
        return 1
    finally:
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
        if session is not None:
            session.stop()
    measured, shares = result.pop("_measured"), result.pop("_shares")
    print(f"{settings.spec.name}: {len(result['plan'])} batches per query "
          f"({settings.warm_up} dropped), sizes {', '.join(map(str, settings.batch_rows))}; "
          f"load average {result['load_average_start'][0]:.2f} at the start, "
          f"{result['load_average_end'][0]:.2f} at the end")
    print(table(measured, shares))
    print(f"per row and per batch: least squares of Spark's triggerExecution on rows over each "
          f"query's steady batches, {CONFIDENCE:.0%} t intervals; shares: bootstrap over "
          "batches; load: the 1-minute load average as the query ended")
    if settings.json_path is not None:
        settings.json_path.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
