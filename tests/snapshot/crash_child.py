"""Child process of test_crash.py: checkpoints a deterministic state in a loop until killed.

Usage: python -m tests.snapshot.crash_child KIND MODE TARGET WORKDIR

Round i sets every key k's value to `expected_value(i, k)` and appends i to the list of every
tenth key, so the state after round i is known exactly. On start it resumes from
`latest_checkpoint(TARGET)` (checking that state first) and prints "writing <i>" before and
"committed <i>" after each snapshot().
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import backends as B

KEYS = 4_000
VALUE = B.ValueStateDescriptor("v", B.Types.LONG())
LIST = B.ListStateDescriptor("l", B.Types.LONG())


def expected_value(i: int, k: int) -> int:
    return i * 1_000_003 + k


def expected(i: int) -> dict[str, dict]:
    return {"l": {k: list(range(1, i + 1)) for k in range(0, KEYS, 10)},
            "v": {k: expected_value(i, k) for k in range(KEYS)}}


def dump(backend: B.KeyedStateBackend) -> dict[str, dict]:
    return {name: {k: c for _, k, c in backend.raw_state(name).iter_entries()}
            for name in ("l", "v")}


def main(kind: str, mode: str, target: str, workdir: str) -> None:
    clock = B.ManualClock(0)
    path = Path(workdir) / uuid.uuid4().hex
    latest = B.latest_checkpoint(target)
    if latest is None:
        backend, start = B.create_backend(kind, clock=clock, path=path), 1
    else:
        backend = B.restore_backend(kind, [latest], clock=clock, path=path)
        if dump(backend) != expected(latest.checkpoint_id):
            raise SystemExit(f"restored checkpoint {latest.checkpoint_id} is wrong")
        start = latest.checkpoint_id + 1
    value, lst = backend.get_state(VALUE), backend.get_list_state(LIST)
    print(f"started {start}", flush=True)
    for i in range(start, start + 10_000):
        for k in range(KEYS):
            backend.set_current_key(k)
            value.update(expected_value(i, k))
            if k % 10 == 0:
                lst.add(i)
        print(f"writing {i}", flush=True)
        backend.snapshot(i, target, mode=mode)
        print(f"committed {i}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
