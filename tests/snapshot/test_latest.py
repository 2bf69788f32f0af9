"""latest_checkpoint: the newest complete checkpoint; interrupted ones ignored and cleaned up."""

from __future__ import annotations

import backends as B
from backends.snapshot import clean_up_incomplete, list_checkpoints


def test_latest_complete_checkpoint(make_backend, clock, tmp_path):
    assert B.latest_checkpoint(tmp_path / "none") is None
    b = make_backend("heap", clock)
    b.set_current_key(1)
    state = b.get_state(B.ValueStateDescriptor("v", B.Types.LONG()))
    for cid in (1, 2, 10):
        state.update(cid)
        b.snapshot(cid, tmp_path)
    (tmp_path / "chk-11").mkdir()  # interrupted: no _metadata
    (tmp_path / "chk-11" / "state-000-v.arrow").write_bytes(b"partial")
    (tmp_path / "chk-12").mkdir()
    (tmp_path / "chk-12" / "_metadata").write_bytes(b"{not json")  # unreadable metadata
    (tmp_path / "notes.txt").write_text("not a checkpoint")
    latest = B.latest_checkpoint(tmp_path)
    assert latest.checkpoint_id == 10 and latest.mode == "full"  # numeric, not lexical, order
    assert [h.checkpoint_id for h in list_checkpoints(tmp_path)] == [1, 2, 10]
    restored = B.restore_backend("heap", [latest], clock=clock)
    restored.set_current_key(1)
    assert restored.get_state(B.ValueStateDescriptor("v", B.Types.LONG())).value() == 10
    restored.close()
    assert clean_up_incomplete(tmp_path) == [str(tmp_path / "chk-11")]
    assert not (tmp_path / "chk-11").exists() and (tmp_path / "chk-12").exists()


def test_latest_can_clean_up_and_writers_clean_up_too(make_backend, clock, tmp_path):
    b = make_backend("heap", clock)
    b.snapshot(1, tmp_path)
    (tmp_path / "chk-2").mkdir()
    assert B.latest_checkpoint(tmp_path, clean_up=True).checkpoint_id == 1
    assert not (tmp_path / "chk-2").exists()
    (tmp_path / "chk-3").mkdir()
    b.snapshot(4, tmp_path)  # a new checkpoint removes interrupted ones first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chk-1", "chk-4"]
    b.snapshot(2, tmp_path)  # an id whose interrupted attempt was cleaned can be written again
    assert B.latest_checkpoint(tmp_path).checkpoint_id == 4
