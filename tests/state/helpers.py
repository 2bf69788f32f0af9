"""Small builders that keep the TTL tests readable."""

from __future__ import annotations

import backends as B

ORW = B.StateTtlConfig.UpdateType.OnReadAndWrite
OCW = B.StateTtlConfig.UpdateType.OnCreateAndWrite
NEVER = B.StateTtlConfig.StateVisibility.NeverReturnExpired
RETURN = B.StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp


def ttl(ttl_ms: int = 100, update=OCW, visibility=NEVER, background: bool = False,
        **strategies: object) -> B.StateTtlConfig:
    """A TTL config; background cleanup is off unless asked, so only read-time cleanup acts."""
    builder = (B.StateTtlConfig.new_builder(ttl_ms)
               .set_update_type(update).set_state_visibility(visibility))
    if not background:
        builder.disable_cleanup_in_background()
    if strategies.get("incremental"):
        builder.cleanup_incrementally(*strategies["incremental"])
    if strategies.get("timers") is not None:
        builder.cleanup_with_timers(strategies["timers"])
    if strategies.get("full_snapshot"):
        builder.cleanup_full_snapshot()
    return builder.build()


def value_desc(cfg: B.StateTtlConfig | None = None, name: str = "v",
               typ: object = None) -> B.ValueStateDescriptor:
    desc = B.ValueStateDescriptor(name, typ or B.Types.LONG())
    if cfg is not None:
        desc.enable_time_to_live(cfg)
    return desc


def list_desc(cfg: B.StateTtlConfig | None = None, name: str = "l",
              typ: object = None) -> B.ListStateDescriptor:
    desc = B.ListStateDescriptor(name, typ or B.Types.LONG())
    if cfg is not None:
        desc.enable_time_to_live(cfg)
    return desc


def map_desc(cfg: B.StateTtlConfig | None = None, name: str = "m",
             key_type: object = None, value_type: object = None) -> B.MapStateDescriptor:
    desc = B.MapStateDescriptor(name, key_type or B.Types.STRING(), value_type or B.Types.LONG())
    if cfg is not None:
        desc.enable_time_to_live(cfg)
    return desc


def add(a: int, b: int) -> int:
    return a + b


def reducing_desc(
    cfg: B.StateTtlConfig | None = None, name: str = "r"
) -> B.ReducingStateDescriptor:
    desc = B.ReducingStateDescriptor(name, add, B.Types.LONG())
    if cfg is not None:
        desc.enable_time_to_live(cfg)
    return desc


class AverageAgg(B.AggregateFunction):
    """Accumulator "sum,count" as a STRING, to exercise a variable-length accumulator."""

    def create_accumulator(self) -> str:
        return "0,0"

    def add(self, value: int, accumulator: str) -> str:
        total, count = (int(x) for x in accumulator.split(","))
        return f"{total + value},{count + 1}"

    def get_result(self, accumulator: str) -> float:
        total, count = (int(x) for x in accumulator.split(","))
        return total / count

    def merge(self, a: str, b: str) -> str:
        ta, ca = (int(x) for x in a.split(","))
        tb, cb = (int(x) for x in b.split(","))
        return f"{ta + tb},{ca + cb}"


def aggregating_desc(cfg: B.StateTtlConfig | None = None,
                     name: str = "a") -> B.AggregatingStateDescriptor:
    desc = B.AggregatingStateDescriptor(name, AverageAgg(), B.Types.STRING())
    if cfg is not None:
        desc.enable_time_to_live(cfg)
    return desc


FOREVER_MS = 1 << 62


def stored_now(backend, desc) -> object:
    """What the current key physically holds in `desc`'s state, seen through the state API:
    the state re-registered with a TTL so long that no stored unit counts as expired (Flink
    applies the TTL in use to the stored last-access times, flink-ttl-facts §1.1), read once.
    A list comes back as a list, a map as a dict, a value as the value. Re-registering drops
    the old registration's cleanup hooks, so a test calls this last."""
    cfg = ttl(FOREVER_MS)
    if isinstance(desc, B.MapStateDescriptor):
        view = map_desc(cfg, desc.name, desc.key_type_info, desc.type_info)
        return dict(backend.get_map_state(view).items())
    if isinstance(desc, B.ListStateDescriptor):
        return list(backend.get_list_state(list_desc(cfg, desc.name, desc.type_info)).get())
    return backend.get_state(value_desc(cfg, desc.name, desc.type_info)).value()
