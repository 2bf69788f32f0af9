"""A recommendation never hides a cost in results (issue 29 item 3): on a real, small TTL sweep
of the q20 join (in-process, heap), the first screen's headline and the backend's
recommendation are the state-against-results trade-off, each TTL with the share of outputs it
changed; the state leader of the same run read as an ordinary comparison says how many outputs
its TTL changed."""

from __future__ import annotations

import json
import shutil
from html import unescape
from pathlib import Path

import pytest

from workloads.report.decision import changed_results, decisions, ttl_headline
from workloads.report.fmt import fmt_value
from workloads.report.load import load_run
from workloads.report.render import report_html
from workloads.run.compare import comparison_configs, run_comparison, write_comparison
from workloads.run.sweep import parse_sweep
from workloads.spec import load_spec

W = "nexmark-q20-join"
TTLS = (100, 4_000)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """q20 swept over a short TTL, which loses join results, and a long one, which does not."""
    spec = load_spec(W).with_overrides(events=20_000, rate=10_000, checkpoint_interval_ms=500)
    configs = comparison_configs(
        [spec], backends=("heap",), repetitions=1, measure_latency=False,
        sweep=parse_sweep("ttl(ms=" + ",".join(map(str, TTLS)) + ")"))
    return write_comparison(run_comparison(configs, in_process=True),
                            tmp_path_factory.mktemp("results-cost"))


def test_a_ttl_sweep_headline_is_state_against_results(swept: Path) -> None:
    run = load_run(swept)
    (row,) = decisions(run, W)["statebench"]
    short, long = (next(k for k in run.scenarios(W) if k.strategy == f"ttl(ms={t})")
                   for t in TTLS)
    lost = changed_results(run, short)
    assert lost is not None and lost > 0 and changed_results(run, long) == 0
    text = row.tradeoff.text
    assert text.startswith("State against results: ttl(ms=100) keeps ")
    assert f"changes {fmt_value(lost, 'share')} of the outputs" in text
    assert text.index("ttl(ms=100)") < text.index("ttl(ms=4000)")
    assert row.recommended == long  # the smallest state that changes no output
    headline = ttl_headline(run, W)
    assert headline is not None and text in headline.text
    html = report_html(run)
    front = html[html.index(f'<div class="workload" data-workload="{W}"'):]
    assert front.index(headline.html) < front.index('<table class="decision"')
    assert "changes" in unescape(headline.html)


def test_a_recommendation_outside_a_sweep_says_what_its_ttl_changed(swept: Path,
                                                                    tmp_path: Path) -> None:
    plain = Path(shutil.copytree(swept, tmp_path / "plain"))
    meta = json.loads((plain / "run.json").read_text())
    meta.pop("sweep", None)
    meta.get("config", {}).pop("sweep", None)
    (plain / "run.json").write_text(json.dumps(meta))
    run = load_run(plain)
    (row,) = decisions(run, W)["statebench"]
    rec = row.recommended
    assert rec is not None and rec.strategy == "ttl(ms=100)"  # smallest state, exact
    lost = changed_results(run, rec)
    assert lost is not None and lost > 0
    assert f"changes {fmt_value(lost, 'share')} of the operator's outputs" in row.tradeoff.text
