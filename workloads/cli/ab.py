"""``statebench ab REV_A REV_B SPEC``: interleaved A/B runs of two git revisions.

Machines drift: a CPU governor, a neighbour's job or a warm page cache moves timings 2-4x
between runs taken minutes apart. Running A's rounds first and B's afterwards turns that drift
into a fake effect. This command instead runs ``statebench run`` alternately, A B A B ..., for
``--rounds`` rounds, so drift hits both sides alike, then diffs the rounds pairwise: each
timing ratio is the geometric mean of the rounds' B/A, with the 95% t interval of their mean
log and an exact sign-flip test (at least 6 rounds are needed to reach p < 0.05 at all).

Each revision is exported with ``git archive`` into a temporary folder and run from there with
``PYTHONPATH`` pointing at it, by this virtualenv's Python: both revisions share the installed
dependencies, nothing is built or downloaded, and the checkout is not touched. ``.`` stands for
the working tree as it is (uncommitted changes included).

Before anything is exported it prints the estimate of the session (the run as this code plans
it, times two sides and the rounds) and refuses one beyond 6 hours or the free disk unless
``--allow-long``, which each round's run is then given where its revision knows it; a line
after each run says how far the session is, with its ETA.

Output: ``<results-dir>/ab-<time>/`` with ``A/`` and ``B/`` (one run folder per round),
``ab.json`` (revisions, commits and the order the runs were taken in) and ``diff.html``.
``statebench diff --rerun RUN_A RUN_B`` uses the same machinery to re-run two stored
configurations with the current code.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workloads.cli.options import CliError, add_rounds_options, joined, positive

#: The tree this code was loaded from: the source of ``diff --rerun`` and of ``.`` in ``ab``.
SOURCE_TREE = Path(__file__).absolute().parents[2]
#: Runs ``statebench`` from whichever tree PYTHONPATH names (old and new layouts alike).
_BOOT = "import sys; from workloads.cli import main; sys.exit(main(sys.argv[1:]))"
WORKING_TREE = "."


@dataclass(frozen=True)
class Invocation:
    """One side's ``statebench`` command and the source tree it runs from."""

    label: str  # "A" or "B": also the sub-folder of the session its runs go to
    args: tuple[str, ...]  # after ``statebench``, without --results-dir
    source: Path  # put first on PYTHONPATH
    describe: str  # for people: "HEAD (51dfcfe0a3dc)", a run folder, ...


#: (invocation, results dir) -> the run folder that invocation wrote.
Runner = Callable[[Invocation, Path], Path]


def interleave(a: Invocation, b: Invocation, rounds: int, runner: Runner,
               root: Path, on_run: Callable[[str], None] | None = None,
               ) -> list[dict[str, Any]]:
    """Run A, B, A, B, ... ``rounds`` times each; return the log in the order runs were taken.
    ``on_run(label)`` is told of each finished run (progress lines with an ETA).

    Strict alternation keeps drift symmetric: whatever slows the machine down during the
    session lands on A and B rounds alike instead of on whichever side ran second.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    log = []
    for round_no in range(rounds):
        for inv in (a, b):
            started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            run_dir = runner(inv, root / inv.label)
            log.append({"round": round_no, "side": inv.label, "started_utc": started,
                        "run_dir": str(run_dir)})
            if on_run is not None:
                on_run(f"round {round_no + 1} {inv.label}")
    return log


def subprocess_runner(inv: Invocation, results_dir: Path) -> Path:
    """Run ``statebench`` from ``inv.source`` in a child process; return its new run folder.

    The child starts in ``results_dir`` (not in a source tree), so PYTHONPATH alone decides
    which revision's code is imported, ahead of the editable install of this checkout.
    """
    results_dir.mkdir(parents=True, exist_ok=True)
    before = {p.name for p in results_dir.iterdir()}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(inv.source), *filter(None, [os.environ.get("PYTHONPATH")])])
    cmd = [sys.executable, "-c", _BOOT, *inv.args, "--results-dir", str(results_dir.resolve())]
    returncode, stdout, stderr = run_child(cmd, cwd=results_dir, env=env)
    if returncode != 0:
        tail = "\n".join((stderr or stdout).strip().splitlines()[-5:])
        raise CliError(f"{inv.label} ({inv.describe}) failed with exit status "
                     f"{returncode}:\n{tail}")
    new = sorted(p for p in results_dir.iterdir()
                 if p.name not in before and (p / "rows.parquet").is_file())
    if len(new) != 1:
        raise CliError(f"{inv.label} ({inv.describe}) wrote {len(new)} run folders in "
                     f"{results_dir}, expected 1")
    return new[0]


#: Seconds a child `statebench run` gets to clean up after a forwarded signal before it is
#: killed (it stops Spark and its JVMs and removes its temporary folders).
CHILD_GRACE_S = 120.0


def run_child(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """Run ``cmd`` to its end and return (status, stdout, stderr).

    If this process is interrupted meanwhile (SIGINT/SIGTERM, which the CLI turns into
    KeyboardInterrupt/SystemExit, or any error), the child gets the same signal and is waited
    for, so it removes its temporary folders and stops its JVMs instead of running on as an
    orphan; only a child that does not end within :data:`CHILD_GRACE_S` is killed.
    """
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate()
    except BaseException as exc:
        signum = signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM
        stop_child(proc, signum)
        raise
    return proc.returncode, stdout, stderr


def _ignore(signum: int, frame: Any) -> None:
    """Signals while a child is being stopped: it is being stopped already."""


def stop_child(proc: subprocess.Popen, signum: int, grace_s: float = CHILD_GRACE_S) -> None:
    """Send ``signum`` to ``proc`` and wait for it (killed after ``grace_s``); signals that
    arrive meanwhile are held off, so the wait itself is not cut short."""
    if proc.poll() is not None:
        return
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, _ignore)  # not SIG_IGN: exec would inherit it
    try:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)
        try:
            proc.communicate(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# ------------------------------------------------------------------------------------------------
# Revisions
# ------------------------------------------------------------------------------------------------


def git(repo: Path, *args: str, binary: bool = False) -> subprocess.CompletedProcess:
    """``git ARGS`` in ``repo``, its status and output returned (never raised: callers say
    what a failure means to them); a missing git is a usage error."""
    try:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=False,
                              text=not binary, timeout=120)
    except OSError as exc:
        raise CliError(f"git is needed to export revisions: {exc}") from None


def resolve_commit(repo: Path, rev: str) -> str:
    """The full commit id of ``rev``; a clear error for an unknown revision."""
    done = git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if done.returncode != 0 or not done.stdout.strip():
        raise CliError(f"unknown git revision {rev!r} in {repo}")
    return done.stdout.strip()


def export_revision(repo: Path, rev: str, dest: Path) -> tuple[Path, str]:
    """``git archive`` revision ``rev`` into ``dest``; ``.`` means this working tree as it is.

    Returns the tree to run and a description ("HEAD (51dfcfe0a3dc)").
    """
    if rev == WORKING_TREE:
        return SOURCE_TREE, "working tree"
    commit = resolve_commit(repo, rev)
    done = git(repo, "archive", "--format=tar", commit, binary=True)
    if done.returncode != 0:
        raise CliError(f"git archive {rev} failed: {done.stderr.decode(errors='replace').strip()}")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest, f"{rev} ({commit[:12]})"


def repository_root(start: Path = SOURCE_TREE) -> Path:
    done = git(start, "rev-parse", "--show-toplevel")
    if done.returncode != 0:
        raise CliError(f"{start} is not inside a git checkout: `statebench ab` compares revisions")
    return Path(done.stdout.strip())


# ------------------------------------------------------------------------------------------------
# Stored configurations
# ------------------------------------------------------------------------------------------------


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key, ensure_ascii=False)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CliError(f"spec value {value!r} cannot be written as TOML")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    raise CliError(f"spec value {value!r} cannot be written as TOML")


def spec_toml(spec: dict[str, Any]) -> str:
    """A spec dict (``WorkloadSpec.to_dict()``, as run.json stores it) as a TOML file.

    Checked by parsing it back: a spec that does not survive the trip is an error, not a
    silently different workload.
    """
    from workloads.spec import parse_spec

    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in spec.items()
             if not isinstance(v, dict)]
    for name, table in spec.items():
        if isinstance(table, dict):
            lines.append(f"\n[{_toml_key(name)}]")
            lines += [f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in table.items()]
    text = "\n".join(lines) + "\n"
    if parse_spec(tomllib.loads(text)).to_dict() != parse_spec(spec).to_dict():
        raise CliError(f"spec {spec.get('name')!r} does not survive writing it as TOML")
    return text


def run_args(meta: dict[str, Any], spec_file: Path, repetitions: int | None = None,
             ) -> tuple[str, ...]:
    """The ``statebench run`` arguments that repeat the configuration recorded in run.json."""
    config = meta.get("config")
    if not isinstance(config, dict) or not isinstance(config.get("backends"), list):
        raise CliError("run.json has no run configuration (config.backends) to re-run")
    args = ["run", str(spec_file), "--backend", ",".join(map(str, config["backends"]))]
    for strategy in config.get("strategies") or []:
        args += ["--strategy", str(strategy)]
    swept = config.get("sweep")
    if swept is not None:  # its scenarios' labels are among the strategies: the sweep says
        # what they run (a stored sweep that no longer parses is refused by the run, one line)
        if not isinstance(swept, dict):
            raise CliError("run.json's config.sweep is not a sweep record")
        from workloads.run.sweep import Sweep

        args += ["--sweep", Sweep(str(swept.get("strategy")), str(swept.get("knob")),
                                  tuple(swept.get("values") or ())).text]
    options = (("parallelism", "--parallelism"), ("source_partitions", "--source-partitions"),
               ("warmup_fraction", "--warmup"), ("time_speedup", "--time-speedup"),
               ("batch_size", "--batch-size"), ("sample_interval_ms", "--sample-interval-ms"))
    for field, flag in options:
        if config.get(field) is not None:
            args += [flag, str(config[field])]
    args += ["--repetitions", str(repetitions or config.get("repetitions") or 1)]
    if config.get("measure_latency") is False:
        args.append("--no-latency")
    if config.get("in_process") or config.get("master") == "in-process":
        args.append("--in-process")
    elif config.get("master"):
        args += ["--master", str(config["master"])]
    return (*args, "--no-report")


def invocation_from_run(run_dir: Path, label: str, workdir: Path,
                        repetitions: int | None = None) -> Invocation:
    """Re-run the configuration stored in ``run_dir`` with the current code."""
    from workloads.cli.checks import run_folder_files

    path = run_dir / "run.json"
    run_folder_files(run_dir)  # a regular file of bounded size
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot re-run {run_dir}: {path} is unreadable ({exc})") from None
    spec = meta.get("spec") if isinstance(meta, dict) else None
    if not isinstance(spec, dict):
        raise CliError(f"cannot re-run {run_dir}: --rerun re-runs folders written by "
                     "`statebench run` (one spec in run.json)")
    spec_file = workdir / f"spec-{label}.toml"
    spec_file.write_text(spec_toml(spec), encoding="utf-8")
    return Invocation(label, run_args(meta, spec_file, repetitions), SOURCE_TREE,
                      str(run_dir))


# ------------------------------------------------------------------------------------------------
# Session
# ------------------------------------------------------------------------------------------------


def session_dir(results_dir: str | Path) -> Path:
    """A new ``ab-<UTC time>`` folder under ``results_dir`` (made only once everything that can
    be checked before the rounds has been: see :func:`session`)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = Path(results_dir) / f"ab-{stamp}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    path.mkdir(parents=True)
    return path


@contextlib.contextmanager
def session(results_dir: str | Path) -> Iterator[Path]:
    """:func:`session_dir`, removed again if the session fails before any round finished (a
    failed session never leaves an empty ``ab-<time>/`` behind); finished rounds are kept."""
    root = session_dir(results_dir)
    try:
        yield root
    except BaseException:
        if not any(p.is_dir() for side in ("A", "B") if (root / side).is_dir()
                   for p in (root / side).iterdir()):
            shutil.rmtree(root, ignore_errors=True)
        raise


def run_session(a: Invocation, b: Invocation, rounds: int, root: Path, alpha: float,
                runner: Runner = subprocess_runner, extra: dict[str, Any] | None = None,
                estimate_s: float | None = None) -> Path:
    """Interleave the rounds, record them in ab.json, write diff.html, print the verdicts.
    A line after each run, with the ETA (``estimate_s``: the session's estimate, until a
    run has ended)."""
    from workloads.cli.progress import Progress
    from workloads.report.diff import summary_lines, write_diff_page
    from workloads.report.load import load_run
    from workloads.report.verdict import Side
    from workloads.results.store import write_text_atomic

    progress = Progress(2 * rounds, root.name, estimate_s=estimate_s, unit="runs")
    try:
        log = interleave(a, b, rounds, runner, root, on_run=progress.advance)
    finally:
        progress.close()
    record = {
        "rounds": rounds,
        "sides": {inv.label: {"describe": inv.describe, "args": list(inv.args)}
                  for inv in (a, b)},
        "order": log,
        **(extra or {}),
    }
    write_text_atomic(root / "ab.json", json.dumps(record, indent=2) + "\n")
    sides = [Side.of(inv.label,
                     [load_run(e["run_dir"]) for e in log if e["side"] == inv.label],
                     interleaved=True, source=inv.describe)
             for inv in (a, b)]
    out = write_diff_page(sides[0], sides[1], root / "diff.html", alpha)
    for line in summary_lines(sides[0], sides[1], ("records_per_s", "job_records_per_s"),
                              alpha):
        print(line)
    print(f"\nrounds:  {root}\ndiff:    {out}")
    return out


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ab", help="run two git revisions alternately (A B A B ...) and diff them",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rev_a", metavar="REV_A", help="git revision of A (or . = working tree)")
    p.add_argument("rev_b", metavar="REV_B", help="git revision of B (or . = working tree)")
    p.add_argument("spec", metavar="SPEC", help="a spec file, or a shipped spec name")
    p.add_argument("--backend", action="append", metavar="LIST",
                   help="backends, comma-separated (default: statebench run's)")
    p.add_argument("--strategy", action="append", metavar="LIST",
                   help="strategies (default: the spec's)")
    p.add_argument("--events", type=positive, help="override the spec's number of events")
    p.add_argument("--parallelism", type=positive, help="operator tasks")
    p.add_argument("--in-process", action="store_true", help="run without Spark")
    p.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    add_rounds_options(p)
    p.set_defaults(handler=ab_command)


def check_spec_argument(spec: str) -> None:
    """SPEC is an untrusted file (read bounded, regular, UTF-8: the same rules as ``run``'s) or
    a shipped spec name, checked before any revision is exported. Its contents are left to each
    revision's own ``run``, which may know fields this one does not."""
    from workloads import limits
    from workloads.spec import builtin_specs

    path = Path(spec)
    if not path.exists() and not path.is_symlink():
        if path.suffix == "" and spec in builtin_specs():
            return
        raise CliError(f"SPEC {spec}: no such file, and not a shipped spec name "
                     f"({', '.join(builtin_specs())})")
    try:
        limits.decode_text(limits.read_bounded(path, limits.MAX_SPEC_BYTES, "spec file"), path,
                           "spec file")
    except FileNotFoundError:
        raise CliError(f"SPEC {spec}: no such file (a broken link)") from None
    except limits.FileProblem as exc:
        raise CliError(str(exc)) from None


def ab_command(args: argparse.Namespace) -> int:
    from workloads.run import run_tempdirs

    if args.in_process and args.master:
        raise CliError("--in-process and --master exclude each other")
    if args.master is not None:  # before any revision is exported
        from workloads.run.engines.masters import check_master_url

        check_master_url(args.master)
    joined(args.backend, "--backend")
    joined(args.strategy, "--strategy")
    check_spec_argument(args.spec)
    repo = repository_root()
    commits = {label: (rev if rev == WORKING_TREE else resolve_commit(repo, rev))
               for label, rev in (("A", args.rev_a), ("B", args.rev_b))}  # before any folder
    spec = str(Path(args.spec).resolve()) if Path(args.spec).is_file() else args.spec
    common = ["run", spec]
    for flag, values in (("--backend", args.backend), ("--strategy", args.strategy)):
        for value in values or []:
            common += [flag, value]
    for flag, value in (("--events", args.events), ("--parallelism", args.parallelism),
                        ("--repetitions", args.repetitions), ("--master", args.master)):
        if value is not None:
            common += [flag, str(value)]
    if args.in_process:
        common.append("--in-process")
    common.append("--no-report")
    from workloads.cli.long_runs import forwarded, session_estimate
    from workloads.cli.run import argv_estimate

    est = session_estimate([common, common], args.rounds, args.results_dir, "ab",
                           args.allow_long, argv_estimate)  # said always; refused if too long
    with run_tempdirs.temp_dir("statebench-ab-") as tmp:  # owner-tagged: swept if killed
        trees = {}
        for label, rev in (("A", args.rev_a), ("B", args.rev_b)):
            trees[label] = export_revision(repo, rev, Path(tmp) / label)
        a, b = (Invocation(label, forwarded(common, trees[label][0], args.allow_long),
                           *trees[label]) for label in ("A", "B"))
        with session(args.results_dir) as root:
            run_session(a, b, args.rounds, root, args.alpha,
                        extra={"revisions": {"A": args.rev_a, "B": args.rev_b},
                               "commits": commits},
                        estimate_s=None if est is None else est.wall_s)
    return 0

