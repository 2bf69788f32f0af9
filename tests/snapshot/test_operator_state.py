"""Operator state: even-split and union list state, broadcast state, across rescaling."""

from __future__ import annotations

import pytest

import backends as B

MAXP = 12
OFFSETS = B.ListStateDescriptor("offsets", B.Types.LONG())
SEEN = B.ListStateDescriptor("seen", B.Types.STRING())
RULES = B.MapStateDescriptor("rules", B.Types.STRING(), B.Types.LONG())


def _old_tasks(make_backend, clock, tmp_path, parallelism: int, kind: str = "heap") -> list:
    handles = []
    for i in range(parallelism):
        kgr = B.KeyGroupRange.of_operator(i, parallelism, MAXP)
        b = make_backend(kind, clock, max_parallelism=MAXP, key_group_range=kgr)
        ops = b.operator_state()
        ops.get_list_state(OFFSETS).add_all([i * 100 + j for j in range(i + 2)])
        ops.get_union_list_state(SEEN).add(f"task{i}")
        ops.get_broadcast_state(RULES).put_all({"limit": 10, "off": None})
        handles.append(b.snapshot(1, tmp_path / f"t{i}"))
    return handles


def _restore(handles, clock, index, new_p, kind="heap", **options):
    return B.restore_backend(
        kind, handles, clock=clock, max_parallelism=MAXP,
        key_group_range=B.KeyGroupRange.of_operator(index, new_p, MAXP), **options)


@pytest.mark.parametrize("old_p,new_p", [(3, 2), (2, 4), (3, 3), (1, 3)])
def test_redistribution(old_p, new_p, make_backend, clock, tmp_path):
    handles = _old_tasks(make_backend, clock, tmp_path, old_p)
    all_offsets = [i * 100 + j for i in range(old_p) for j in range(i + 2)]
    parts = []
    for j in range(new_p):
        r = _restore(handles, clock, j, new_p, operator_index=j, parallelism=new_p)
        ops = r.operator_state()
        parts.append(ops.get_list_state(OFFSETS).get())
        assert sorted(ops.get_union_list_state(SEEN).get()) == [f"task{i}" for i in range(old_p)]
        assert dict(ops.get_broadcast_state(RULES).items()) == {"limit": 10, "off": None}
        r.close()
    if old_p == new_p:  # same parallelism: every task keeps its own list
        assert parts == [[i * 100 + j for j in range(i + 2)] for i in range(old_p)]
    else:  # even split: contiguous parts whose sizes differ by at most one
        assert [e for p in parts for e in p] == all_offsets
        assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_task_position_inferred_from_key_groups(make_backend, clock, tmp_path):
    handles = _old_tasks(make_backend, clock, tmp_path, 2)
    r = _restore(handles, clock, 1, 3)  # 12 key groups / 3: ranges are unambiguous
    assert r.operator_state().get_list_state(OFFSETS).get() == [100, 101]  # of 0,1,100,101,102
    r.close()
    with pytest.raises(ValueError, match="operator 0 of 2 owns"):
        _restore(handles, clock, 1, 3, operator_index=0, parallelism=2)


def test_operator_state_in_incremental_checkpoints(make_backend, clock, tmp_path):
    b = make_backend("rocksdb", clock)
    b.operator_state().get_union_list_state(SEEN).add_all(["a", "b"])
    h = b.snapshot(1, tmp_path, mode="incremental")
    r = B.restore_backend("heap", [h], clock=clock)
    assert r.operator_state().get_union_list_state(SEEN).get() == ["a", "b"]
    r.close()


def test_mode_and_type_changes(make_backend, clock, tmp_path):
    b = make_backend("heap", clock)
    b.operator_state().get_list_state(B.ListStateDescriptor("n", B.Types.INT())).add(5)
    h = b.snapshot(1, tmp_path)
    r = B.restore_backend("heap", [h], clock=clock)
    with pytest.raises(B.StateMigrationError, match=r"'n'.*split.*union"):
        r.operator_state().get_union_list_state(B.ListStateDescriptor("n", B.Types.INT()))
    widened = r.operator_state().get_list_state(B.ListStateDescriptor("n", B.Types.DOUBLE()))
    assert widened.get() == [5.0]
    r.close()
    r = B.restore_backend("heap", [h], clock=clock)
    with pytest.raises(B.StateMigrationError, match=r"'n'.*INT.*BOOLEAN"):
        r.operator_state().get_list_state(B.ListStateDescriptor("n", B.Types.BOOLEAN()))
    r.close()


def test_unregistered_operator_state_is_carried_forward(make_backend, clock, tmp_path):
    b = make_backend("heap", clock)
    b.operator_state().get_list_state(OFFSETS).add(1)
    r = B.restore_backend("heap", [b.snapshot(1, tmp_path / "a")], clock=clock)
    r2 = B.restore_backend("heap", [r.snapshot(2, tmp_path / "b")], clock=clock)
    assert r2.operator_state().get_list_state(OFFSETS).get() == [1]
    for x in (r, r2):
        x.close()


def test_list_state_rejects_bad_values(make_backend, clock):
    ops = make_backend("heap", clock).operator_state()
    lst = ops.get_list_state(OFFSETS)
    with pytest.raises(TypeError):
        lst.add(None)
    with pytest.raises(TypeError):
        lst.add("x")
    with pytest.raises(ValueError, match="TTL"):
        d = B.ListStateDescriptor("t", B.Types.LONG())
        d.enable_time_to_live(B.StateTtlConfig.new_builder(10).build())
        ops.get_list_state(d)
