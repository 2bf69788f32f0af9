"""State schema evolution across restore: Avro-style rules, eager (heap) / lazy (RocksDB)."""

from __future__ import annotations

import json

import pytest

import backends as B
from backends.snapshot.metadata import decode_metadata, encode_metadata

T = B.Types
OLD_ROW = T.ROW_NAMED(["id", "name", "score"], [T.INT(), T.STRING(), T.INT()])
NEW_ROW = T.ROW_NAMED(["id", "score", "email"], [T.LONG(), T.DOUBLE(), T.STRING()],
                      defaults={"email": "none"})


def _snapshot(make_backend, clock, tmp_path, kind="heap"):
    b = make_backend(kind, clock)
    rec = b.get_state(B.ValueStateDescriptor("rec", OLD_ROW))
    lst = b.get_list_state(B.ListStateDescriptor("l", T.INT()))
    m = b.get_map_state(B.MapStateDescriptor("m", T.STRING(), T.INT()))
    for k in range(50):
        b.set_current_key(k)
        rec.update({"id": k, "name": f"n{k}", "score": k * 2})
        lst.add_all([k, k + 1])
        m.put("a", k)
    return b.snapshot(1, tmp_path / "snap")


def _restore(kind, handle, clock, tmp_path, **options):
    return B.restore_backend(kind, [handle], clock=clock, path=tmp_path / f"r-{kind}", **options)


@pytest.mark.parametrize("dest", ["heap", "rocksdb"])
def test_compatible_after_migration(dest, make_backend, clock, tmp_path):
    handle = _snapshot(make_backend, clock, tmp_path)
    r = _restore(dest, handle, clock, tmp_path)
    assert r.restore_stats.migrations == []
    rec = r.get_state(B.ValueStateDescriptor("rec", NEW_ROW))
    lst = r.get_list_state(B.ListStateDescriptor("l", T.LONG()))
    m = r.get_map_state(B.MapStateDescriptor("m", T.STRING(), T.DOUBLE()))
    r.set_current_key(7)
    assert rec.value() == {"id": 7, "score": 14.0, "email": "none"}
    assert list(lst.get()) == [7, 8]
    assert m.get("a") == 7.0 and isinstance(m.get("a"), float)
    stats = r.migration_stats["rec"]
    assert (stats.phase, stats.compatibility) == ("registration", "compatible_after_migration")
    assert stats.keys == 50 and stats.duration_ms > 0
    if dest == "rocksdb":
        assert stats.bytes_read > 0 and stats.bytes_written > 0
    else:
        assert stats.bytes_read == r.restore_stats.bytes_per_state["rec"]
    assert {m.state for m in r.restore_stats.migrations} == {"rec", "l", "m"}
    # the same type again: compatible as is, nothing rewritten
    r.get_state(B.ValueStateDescriptor("rec", NEW_ROW))
    assert len(r.restore_stats.migrations) == 3
    r.close()


def test_heap_migrates_eagerly_when_descriptors_are_given(make_backend, clock, tmp_path):
    handle = _snapshot(make_backend, clock, tmp_path)
    desc = B.ValueStateDescriptor("rec", NEW_ROW)
    r = _restore("heap", handle, clock, tmp_path, descriptors=[desc])
    assert [(m.state, m.phase) for m in r.restore_stats.migrations] == [("rec", "restore")]
    assert r.raw_state("rec").spec.value_type == NEW_ROW  # already migrated
    state = r.get_state(desc)
    r.set_current_key(3)
    assert state.value() == {"id": 3, "score": 6.0, "email": "none"}
    assert len(r.restore_stats.migrations) == 1
    r.close()


def test_rocksdb_migrates_lazily_even_with_descriptors(make_backend, clock, tmp_path):
    handle = _snapshot(make_backend, clock, tmp_path)
    desc = B.ValueStateDescriptor("rec", NEW_ROW)
    r = _restore("rocksdb", handle, clock, tmp_path, descriptors=[desc])
    assert r.restore_stats.migrations == []
    assert r.raw_state("rec").spec.value_type == OLD_ROW
    r.get_state(desc)
    assert [(m.state, m.phase) for m in r.restore_stats.migrations] == [("rec", "registration")]
    r.close()


@pytest.mark.parametrize("dest", ["heap", "rocksdb"])
@pytest.mark.parametrize("desc,match", [
    (B.ValueStateDescriptor("rec", T.ROW_NAMED(["ident", "name", "score"],
                                               [T.INT(), T.STRING(), T.INT()])),
     r"'rec'.*value\.ident is a new field without a default"),
    (B.ValueStateDescriptor("rec", T.ROW_NAMED(["id", "name", "score"],
                                               [T.INT(), T.STRING(), T.BOOLEAN()])),
     r"'rec'.*value\.score changes type"),
    (B.ListStateDescriptor("l", T.STRING()), r"'l'.*INT\(\) -> STRING\(\)"),
    (B.MapStateDescriptor("m", T.LONG(), T.INT()), r"'m'.*map key type"),
    (B.ListStateDescriptor("rec", OLD_ROW), r"'rec' holds value state"),
])
def test_incompatible_changes_fail_clearly(dest, desc, match, make_backend, clock, tmp_path):
    handle = _snapshot(make_backend, clock, tmp_path)
    r = _restore(dest, handle, clock, tmp_path)
    register = {"value": r.get_state, "list": r.get_list_state, "map": r.get_map_state}
    with pytest.raises(B.StateMigrationError, match=match):
        register[desc.kind](desc)
    r.close()
    with pytest.raises(B.StateMigrationError, match=match):  # fails fast at restore too
        B.restore_backend(dest, [handle], clock=clock, path=tmp_path / "again",
                          descriptors=[desc])


def test_narrowing_is_incompatible(make_backend, clock, tmp_path):
    b = make_backend("heap", clock)
    b.set_current_key(1)
    b.get_state(B.ValueStateDescriptor("x", T.LONG())).update(5)
    r = _restore("heap", b.snapshot(1, tmp_path), clock, tmp_path)
    with pytest.raises(B.StateMigrationError, match=r"'x'.*narrows LONG to INT"):
        r.get_state(B.ValueStateDescriptor("x", T.INT()))
    r.close()


@pytest.mark.parametrize("dest", ["heap", "rocksdb"])
def test_ttl_switched_on_and_off_across_restore(dest, make_backend, clock, tmp_path):
    b = make_backend("heap", clock)
    plain = B.ValueStateDescriptor("x", T.LONG())
    b.set_current_key(1)
    b.get_state(plain).update(5)
    clock.set(1_000)
    r = _restore(dest, b.snapshot(1, tmp_path / "a"), clock, tmp_path)
    with_ttl = B.ValueStateDescriptor("x", T.LONG())
    with_ttl.enable_time_to_live(B.StateTtlConfig.new_builder(100).build())
    r.get_state(with_ttl)
    assert r.raw_state("x").spec.ttl_layout
    assert dict((k, c) for _, k, c in r.raw_state("x").iter_entries()) == {1: (5, 1_000)}
    assert r.migration_stats["x"].compatibility == "compatible_after_migration"
    back = B.restore_backend(dest, [r.snapshot(2, tmp_path / "b")], clock=clock,
                             path=tmp_path / "back")
    back.get_state(plain)
    assert dict((k, c) for _, k, c in back.raw_state("x").iter_entries()) == {1: 5}
    r.close()
    back.close()


def test_newer_serializer_version_is_refused(make_backend, clock, tmp_path):
    handle = _snapshot(make_backend, clock, tmp_path)
    meta = tmp_path / "snap" / "chk-1" / "_metadata"
    body = decode_metadata(str(meta), meta.read_bytes())
    body["states"][0]["value_serializer"]["version"] = 99
    meta.write_bytes(encode_metadata(json.loads(json.dumps(body))))
    with pytest.raises(B.StateMigrationError, match="version 99, newer"):
        B.restore_backend("heap", [handle], clock=clock)
