"""``statebench regress`` end to end on real commits, and CI's use of it.

A scratch clone of this repository gets an empty commit and a planted one (a loop at the
heap's key switch costing several times a value read). The check is the command CI runs
(``.ci/run``'s ``statebench regress`` line, narrowed to the heap's value benchmarks so the test
stays short): it must fail on the planted commit and pass on the empty one. Bad input gets one
line and exit 2 before any work.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from workloads.regress import plants as P

ROOT = Path(__file__).resolve().parents[2]
BOOT = "import sys; from workloads.cli import main; sys.exit(main(sys.argv[1:]))"
#: Three benchmarks, six pairs, and a 10% threshold: the plant below makes heap value reads
#: several times slower, so the narrowed check cannot miss it, and an empty commit would need
#: a null 10% off to flag (the experiments saw at most 6.4% over 20 empty checks of 88).
NARROW = ("--bench", "heap/plain/value_(get|update)|raw/heap/value_get", "--pairs", "6",
          "--threshold", "0.1")


def ci_regress_args() -> list[str]:
    """The arguments of the ``statebench regress`` call in .ci/run (the README's test command)."""
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for part in text.replace("&&", "\n").splitlines():
        words = shlex.split(part.strip()) if "statebench regress" in part else []
        if words:
            return words[words.index("regress"):]
    raise AssertionError(".ci/run runs no `statebench regress`")


def statebench(repo: Path, *args: str, results: Path) -> subprocess.CompletedProcess:
    """``statebench`` run from the clone's own code, as a user of that checkout runs it."""
    return subprocess.run([sys.executable, "-c", BOOT, *args, "--results-dir", str(results)],
                          cwd=repo, env={"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A clone of this checkout (its working tree as a commit) with an empty and a planted
    commit on top, each on its own branch."""
    repo = tmp_path_factory.mktemp("regress") / "repo"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(repo)], check=True)
    # this checkout's uncommitted changes are part of what is tested
    tracked = subprocess.run(["git", "ls-files", "-m", "-o", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    for name in tracked:
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_bytes((ROOT / name).read_bytes())
    base = P.commit(repo, [], "the checkout as it is")
    empty = P.commit(repo, [], "an empty commit")
    subprocess.run(["git", "checkout", "-q", "-b", "planted", base], cwd=repo, check=True)
    planted = P.commit(repo, [P.Plant("heap.key", 60)], "a planted regression")
    return {"repo": repo, "base": base, "empty": empty, "planted": planted}


def _checkout(repo: Path, commit: str) -> None:
    subprocess.run(["git", "checkout", "-q", commit], cwd=repo, check=True)


@pytest.mark.slow
def test_ci_fails_on_a_planted_regression_and_passes_on_an_empty_commit(
        clone: dict, tmp_path: Path) -> None:
    repo: Path = clone["repo"]  # type: ignore[assignment]
    args = [*ci_regress_args(), *NARROW]
    _checkout(repo, clone["planted"])  # type: ignore[arg-type]
    planted = statebench(repo, *args, results=tmp_path / "planted")
    assert planted.returncode == 1, planted.stdout + planted.stderr
    assert "REGRESSION" in planted.stdout
    (doc,) = (tmp_path / "planted").glob("regress-*/regress.json")
    result = json.loads(doc.read_text())
    verdicts = {e["name"]: e["verdict"] for e in result["estimates"]}
    assert verdicts["state/heap/plain/value_get"] == "slower"
    assert verdicts["raw/heap/value_get"] == "no change"  # the plant cannot touch it
    assert (doc.parent / "regress.html").read_text().count("<tr") == len(verdicts) + 1

    _checkout(repo, clone["empty"])  # type: ignore[arg-type]
    empty = statebench(repo, *args, results=tmp_path / "empty")
    assert empty.returncode == 0, empty.stdout + empty.stderr
    assert "no regression" in empty.stdout


@pytest.mark.slow
def test_an_accepted_regression_passes_and_says_so(clone: dict, tmp_path: Path) -> None:
    repo: Path = clone["repo"]  # type: ignore[assignment]
    done = statebench(repo, "regress", str(clone["base"]), str(clone["planted"]), *NARROW,
                      "--accept", "heap/plain/value", results=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(accepted)" in done.stdout


def test_a_base_this_clone_lacks_is_said_and_skipped_only_when_asked(clone: dict,
                                                                     tmp_path: Path) -> None:
    """CI's form (--if-base-exists) on a clone without the parent says so and passes; without
    the flag the same is bad input."""
    repo: Path = clone["repo"]  # type: ignore[assignment]
    done = statebench(repo, "regress", "no-such-parent", "--if-base-exists", results=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nothing to compare against, no check made" in done.stdout
    assert "--if-base-exists" in ci_regress_args()
    assert statebench(repo, "regress", "no-such-parent", results=tmp_path).returncode == 2
    assert not list(tmp_path.glob("regress-*"))


@pytest.mark.parametrize("args, message", [
    (["nope-rev"], "unknown git revision 'nope-rev'"),
    (["HEAD", "--bench", "("], "is not a regular expression"),
    (["HEAD", "--bench", "no-such-benchmark"], "matches no benchmark"),
    (["HEAD", "--pairs", "1"], "at least 2"),
    (["HEAD", "--accept", "[x"], "is not a regular expression"),
    (["HEAD", "--threshold", "2"], "not a share"),
])
def test_bad_input_is_one_line_and_exit_2(clone: dict, tmp_path: Path, args: list[str],
                                          message: str) -> None:
    done = statebench(clone["repo"], "regress", *args, results=tmp_path)  # type: ignore[arg-type]
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.glob("regress-*"))  # nothing written


@pytest.mark.slow
def test_the_full_check_names_an_exact_figure_that_a_commit_changed(clone: dict,
                                                                    tmp_path: Path) -> None:
    """A commit that changes what the workload does (here the seed of sessions-churn) changes
    counts that are exact under the logical clock: named, and failing, however fast it is."""
    repo: Path = clone["repo"]  # type: ignore[assignment]
    _checkout(repo, clone["base"])  # type: ignore[arg-type]
    spec = repo / "workloads" / "specs" / "sessions-churn.toml"
    spec.write_text(spec.read_text().replace("seed = 3", "seed = 4", 1))
    changed = P.commit(repo, [], "another seed")
    done = statebench(repo, "regress", str(clone["base"]), changed, "--full", "--bench",
                      "scenario/sessions-churn/heap/timer", "--pairs", "2", results=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "scenario/sessions-churn/heap/timer stored_entries" in done.stdout
    assert ": changed" in done.stdout
