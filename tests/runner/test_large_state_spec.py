"""The large-state operator spec (issue 17 item 7): q18 dedup over millions of distinct
(bidder, auction) keys with a long TTL, outside the default comparison, whose RocksDB state
outgrows the spec's block cache at least 10x (the full-size run is a benchmark command:
``statebench run nexmark-large-dedup``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from workloads.nexmark import generate_nexmark
from workloads.operators.input import nexmark_config, select
from workloads.results.summaries import summaries
from workloads.run.compare import DEFAULT_SPECS, default_specs
from workloads.run.engines.inprocess import run_in_process
from workloads.run.plan import RunConfig
from workloads.spec import load_spec

NAME = "nexmark-large-dedup"


def test_large_spec_is_shipped_outside_the_default() -> None:
    spec = load_spec(NAME)
    assert NAME not in DEFAULT_SPECS and NAME not in {s.name for s in default_specs()}
    assert spec.operator.kind == "dedup" and spec.operator.query == "q18"
    nexmark = spec.operator.nexmark
    assert (nexmark.hot_auction_ratio, nexmark.hot_bidder_ratio) == (1, 1)  # no hot keys
    run_ms = spec.time.events * 1000 // spec.time.rate
    assert spec.state.ttl_ms > run_ms  # a long TTL: every key is still live at the end
    assert spec.rocksdb.block_cache_size is not None and spec.checkpoints.interval_ms > 0


def _peaks(spec, backend: str, tmp_path) -> dict[str, float]:
    out = run_in_process(RunConfig(spec=spec, backends=(backend,), measure_latency=False,
                                   checkpoint_root=str(tmp_path / backend)))
    ((_key, stats),) = summaries(out.rows).items()
    return {m: s.hi for m, s in stats.items()}


def test_almost_every_bid_is_a_new_key(tmp_path) -> None:
    spec = load_spec(NAME).with_overrides(events=50_000)
    peaks = _peaks(spec, "heap", tmp_path)
    assert peaks["live_entries"] >= 0.95 * peaks["records"]  # distinct pairs ~ bids


#: The scale at which the RocksDB run measures SST bytes per entry (the full spec's 4 M events
#: took nearly four minutes of CI; ``statebench run nexmark-large-dedup`` runs it whole).
MEASURED_EVENTS = 400_000


def test_rocksdb_state_outgrows_the_block_cache_tenfold(tmp_path) -> None:
    """The full run's peak state: its exact count of distinct (bidder, auction) keys (every one
    still live: the TTL outlasts the run), times RocksDB's SST bytes per live entry measured on a
    tenth of the events, is at least 10x the spec's block cache."""
    spec = load_spec(NAME)
    batch = pa.Table.from_batches(
        [b for b in generate_nexmark(nexmark_config(spec)).to_batches()]).combine_chunks()
    _rows, keys = select(spec.operator, batch.to_batches()[0])
    live = int(np.unique(keys).size)
    assert live >= 3_000_000
    # memtables of 4 MiB, so that a tenth of the events reaches SST files as the whole run's do
    small = spec.with_overrides(events=MEASURED_EVENTS, rocksdb__write_buffer_size=4 << 20)
    peaks = _peaks(small, "rocksdb", tmp_path)
    per_entry = peaks["rocksdb_sst_bytes"] / peaks["live_entries"]
    assert per_entry > 0 and live * per_entry >= 10 * spec.rocksdb.block_cache_size
