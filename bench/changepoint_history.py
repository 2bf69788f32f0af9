"""An asv history with one known slowdown, to check that the change-point report names it.

``python -m bench.changepoint_history [--commits 8] [--plant 5] [--bench REGEX] [--suite DIR]
[--json OUT] [--keep DIR]``

1. clones this repository's HEAD into a temporary folder and adds ``commits - 1`` commits on
   top: empty ones (``git commit --allow-empty``), except at position ``plant`` (HEAD is
   position 1), which slows the heap backend's key switch (:data:`PLANT`: a loop at the top of
   the ``set_current_key`` closure in backends/heap_backend.py, run once per record);
2. runs ``asv run --quick`` over those commits (asv makes one virtualenv and builds and installs
   each commit's wheel into it), with this working tree's benchmark suite (``bench/``, copied:
   it may hold benchmarks HEAD has not committed yet; ``--suite`` names another) and the
   results, environments and machine file in the temporary folder;
3. prints the change-point report (``python -m bench.changepoints``) over those results, and
   writes its JSON where ``--json`` says.

The temporary folder is removed at the end, also on failure or Ctrl-C; ``--keep DIR`` first
copies the asv results and the clone's git folder into a new folder, to report on again
(``python -m bench.changepoints DIR/results --repo DIR/repo.git``). An
empty commit changes nothing asv measures, so any step the report names elsewhere than at the
plant is noise it failed to reject, and a plant it does not name is a miss.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench import changepoints

REPO = Path(__file__).resolve().parents[1]
#: The file and the line the plant goes after: the first line of the heap backend's per-record
#: key switch.
PLANT_FILE = "backends/heap_backend.py"
PLANT_AFTER = "        def set_current_key(key: Any) -> None:\n"
PLANT = "            for _ in range(30):  # planted slowdown (bench/changepoint_history.py)\n" \
        "                pass\n"
#: The benchmarks run by default: the same-process ratios, and the absolute StateOps times to
#: set beside them.
DEFAULT_BENCH = r"^bench_ratios\.|^bench_state_ops\.StateOps\."
MACHINE = "changepoint-history"
GIT_ID = ["-c", "user.name=statebench", "-c", "user.email=statebench@localhost"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def plant(source: str) -> str:
    """``source`` (backends/heap_backend.py) with :data:`PLANT` after the line that opens the
    key switch; ValueError if that line is not there exactly once (the backend moved on)."""
    if source.count(PLANT_AFTER) != 1:
        raise ValueError(f"{PLANT_FILE} has no single line {PLANT_AFTER.strip()!r} to plant "
                         "after")
    return source.replace(PLANT_AFTER, PLANT_AFTER + PLANT)


def make_history(clone: Path, commits: int, plant_at: int) -> list[str]:
    """Clone HEAD into ``clone`` and add commits up to ``commits`` in all: the hashes, oldest
    first (HEAD is the first, the plant the ``plant_at``-th)."""
    if not 2 <= plant_at <= commits:
        raise ValueError(f"--plant must be between 2 and --commits ({commits}), not {plant_at}")
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    hashes = [_git(clone, "rev-parse", "HEAD")]
    for position in range(2, commits + 1):
        if position == plant_at:
            path = clone / PLANT_FILE
            path.write_text(plant(path.read_text()))
            _git(clone, "commit", "--quiet", "-am", "plant a slowdown in the heap key switch")
        else:
            _git(clone, "commit", "--quiet", "--allow-empty", "-m", f"empty commit {position}")
        hashes.append(_git(clone, "rev-parse", "HEAD"))
    return hashes


def asv_config(tmp: Path, clone: Path, source: Path = REPO / "bench") -> Path:
    """The repository's asv.conf.json pointed at the clone, with a copy of the suite
    ``source``, the environments, results and site under ``tmp``. The copy's folder is named
    bench (asv imports the suite as a package of its folder's name) and holds nothing else: a
    suite inside a checkout would import that checkout's statebench instead of the wheel asv
    installed for each commit."""
    from asv import util

    suite = tmp / "suite" / "bench"
    shutil.copytree(source, suite, ignore=shutil.ignore_patterns("__pycache__"))
    conf = util.load_json(str(REPO / "asv.conf.json"), js_comments=True)
    conf.update(repo=str(clone), branches=[_git(clone, "branch", "--show-current")],
                benchmark_dir=str(suite), env_dir=str(tmp / "env"),
                results_dir=str(tmp / "results"), html_dir=str(tmp / "html"))
    path = tmp / "asv.conf.json"
    path.write_text(json.dumps(conf, indent=1))
    return path


def run_asv(tmp: Path, conf: Path, hashes: list[str], bench: str) -> None:
    """``asv machine`` then ``asv run --quick`` over ``hashes`` (asv's HASHFILE range), its
    output passed through."""
    hashfile = tmp / "commits.txt"
    hashfile.write_text("\n".join(hashes) + "\n")
    base = [sys.executable, "-m", "asv"]
    # asv's machine file (~/.asv-machine.json) goes in tmp; pip keeps the user's cache, so the
    # environment's dependencies are not downloaded again into a folder about to be removed
    env = {**os.environ, "HOME": str(tmp)}
    env.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    env.pop("PYTHONPATH", None)
    subprocess.run([*base, "machine", "--yes", "--machine", MACHINE, "--config", str(conf)],
                   check=True, env=env, cwd=tmp, stdout=subprocess.DEVNULL)
    subprocess.run([*base, "run", "--quick", "--show-stderr", "--machine", MACHINE,
                    "--bench", bench, "--config", str(conf), f"HASHFILE:{hashfile}"],
                   check=True, env=env, cwd=tmp)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.changepoint_history",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=8, help="commits in all (default 8)")
    parser.add_argument("--plant", type=int, default=5,
                        help="position of the slowdown, HEAD being 1 (default 5)")
    parser.add_argument("--bench", default=DEFAULT_BENCH,
                        help=f"asv's --bench regex (default {DEFAULT_BENCH!r})")
    parser.add_argument("--suite", type=Path, default=REPO / "bench",
                        help="the benchmark suite asv runs (default: this working tree's bench/)")
    parser.add_argument("--json", type=Path, default=None, help="write the report's JSON here")
    parser.add_argument("--keep", type=Path, default=None,
                        help="copy the results and the clone into this new folder first")
    args = parser.parse_args(argv)
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep} exists: name a new folder")
    tmp = Path(tempfile.mkdtemp(prefix="statebench-cp-history-"))
    try:
        clone = tmp / "repo"
        hashes = make_history(clone, args.commits, args.plant)
        print(f"history: {len(hashes)} commits, the plant at {args.plant}: "
              f"{hashes[args.plant - 1][:8]}", flush=True)
        run_asv(tmp, asv_config(tmp, clone, args.suite), hashes, args.bench)
        if args.keep is not None:
            args.keep.mkdir(parents=True)
            shutil.copytree(tmp / "results", args.keep / "results")
            shutil.copytree(clone / ".git", args.keep / "repo.git")
        report = [str(tmp / "results"), "--repo", str(clone), "--machine", MACHINE]
        if args.json is not None:
            report += ["--json", str(args.json)]
        return changepoints.main(report)
    except (ValueError, subprocess.CalledProcessError) as exc:
        print(f"bench.changepoint_history: {exc}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
