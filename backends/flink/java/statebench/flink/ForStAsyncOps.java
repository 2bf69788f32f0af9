package statebench.flink;

import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.v2.AggregatingState;
import org.apache.flink.api.common.state.v2.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.v2.ListState;
import org.apache.flink.api.common.state.v2.ListStateDescriptor;
import org.apache.flink.api.common.state.v2.MapState;
import org.apache.flink.api.common.state.v2.MapStateDescriptor;
import org.apache.flink.api.common.state.v2.ReducingState;
import org.apache.flink.api.common.state.v2.ReducingStateDescriptor;
import org.apache.flink.api.common.state.v2.State;
import org.apache.flink.api.common.state.v2.StateDescriptor;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.runtime.asyncprocessing.RecordContext;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The worker's control and state-operation commands (Worker's layouts) on ForSt's V2 backend of
 * a forst-async worker ({@link ForStAsyncLane} routes them here): what lets the differential
 * oracle's random programs (tests/flink/oplang.py) run on State V2, read for read against V1.
 *
 * <p>Why the synchronous methods: the oracle compares every read's value in order, one key at
 * a time; V2's synchronous methods go through the execution controller (handleRequestSync)
 * under the current key's record context, as ForSt's own State V2 tests drive them. SET_KEY
 * leaves the previous key's context and enters one for the new key.
 */
final class ForStAsyncOps {
    /** The record of the state ops' contexts: TTL reads the lane's clock (SET_TIME). */
    private static final Object OPS_RECORD = new Object();
    private final Map<Integer, Object[]> opsStates = new HashMap<>();
    private RecordContext<Object> opsContext;

    /** A fresh backend: no states, no current key (its controller is closed or new). */
    void reset() {
        opsStates.clear();
        opsContext = null;
    }

    /** Leaves the current key's record context (its requests all finished). */
    private void leaveKey(ForStAsyncLane.V2 v2) throws Exception {
        if (opsContext != null) {
            opsContext.release();
            opsContext = null;
            v2.aec.drainInflightRecords(0);
        }
    }

    /**
     * The worker's control and state-operation commands (Worker's layouts) on the V2 backend,
     * through the states' synchronous methods, which go through the execution controller
     * (handleRequestSync) under the current key's record context, as ForSt's own State V2 tests
     * drive them: the differential oracle's programs on State V2. SET_KEY leaves the previous
     * key's context and enters one for the new key. Not served (a clear error): COUNTS,
     * PROPERTIES, SNAPSHOT and BENCH (V1's key walks and snapshot path).
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    void execute(ForStAsyncLane.V2 v2, boolean stringKeys, List<ForStAsyncLane.Reg> regs,
                 int opcode, Wire.In in, Wire.Out out) throws Exception {
        switch (opcode) {
            case Worker.SET_TIME:
                v2.time.now = in.i64();
                return;
            case Worker.SET_KEY: {
                Object key = in.value();
                if (stringKeys != (key instanceof String)) {
                    throw new IllegalArgumentException("key " + key + " does not match the "
                            + "worker's " + (stringKeys ? "string" : "long") + " keys");
                }
                leaveKey(v2);
                opsContext = v2.aec.buildContext(OPS_RECORD, key);
                opsContext.retain();
                v2.aec.setCurrentContext(opsContext);
                return;
            }
            case Worker.REGISTER: {
                int sid = in.u16();
                int kind = in.u8();
                String name = in.str();
                int valueType = in.u8();
                int mapKeyType = in.u8();
                int function = in.u8();
                StateTtlConfig ttl = ForStAsyncLane.v2Ttl(FlinkBackend.readTtl(in, in.i64()));
                register(v2, regs, sid, kind, name, valueType, mapKeyType, function, ttl);
                return;
            }
            case Worker.COMPACT:
                for (ForStAsyncLane.Reg r : regs) {
                    ForStAccess.compact(v2.kb, r.name);
                }
                return;
            case Worker.FLUSH:
                ForStAccess.flush(v2.kb);
                return;
            default:
                break;
        }
        if (opcode < Worker.CLEAR) {
            throw new IllegalArgumentException("control opcode 0x" + Integer.toHexString(opcode)
                    + " is not served on the forst-async backend (State V2)");
        }
        int sid = in.u16();
        Object[] entry = opsStates.get(sid);
        if (entry == null) {
            throw new IllegalArgumentException("state id " + sid + " is not registered");
        }
        if (opsContext == null) {
            throw new IllegalStateException("no current key (SET_KEY first)");
        }
        State st = (State) entry[1];
        switch (opcode) {
            case Worker.CLEAR:
                st.clear();
                return;
            case Worker.VALUE_GET:
                out.result(((ValueState<Object>) st).value());
                return;
            case Worker.VALUE_UPDATE:
                ((ValueState<Object>) st).update(in.value());
                return;
            case Worker.LIST_GET:
                out.result(listOf(((ListState<Object>) st).get()));
                return;
            case Worker.LIST_ADD:
                ((ListState<Object>) st).add(in.value());
                return;
            case Worker.LIST_ADD_ALL:
                ((ListState<Object>) st).addAll((List<Object>) in.value());
                return;
            case Worker.LIST_UPDATE:
                ((ListState<Object>) st).update((List<Object>) in.value());
                return;
            case Worker.MAP_GET:
                out.result(((MapState<Object, Object>) st).get(in.value()));
                return;
            case Worker.MAP_PUT: {
                Object k = in.value();
                ((MapState<Object, Object>) st).put(k, in.value());
                return;
            }
            case Worker.MAP_PUT_ALL:
                ((MapState<Object, Object>) st).putAll((Map<Object, Object>) in.value());
                return;
            case Worker.MAP_REMOVE:
                ((MapState<Object, Object>) st).remove(in.value());
                return;
            case Worker.MAP_CONTAINS:
                out.result(((MapState<Object, Object>) st).contains(in.value()));
                return;
            case Worker.MAP_ENTRIES: {
                List<Object> pairs = new ArrayList<>();
                Iterable<Map.Entry<Object, Object>> it = ((MapState<Object, Object>) st).entries();
                if (it != null) {
                    for (Map.Entry<Object, Object> e : it) {
                        List<Object> pair = new ArrayList<>(2);
                        pair.add(e.getKey());
                        pair.add(e.getValue());
                        pairs.add(pair);
                    }
                }
                out.result(pairs);
                return;
            }
            case Worker.MAP_KEYS: {
                List<Object> keys = listOf(((MapState<Object, Object>) st).keys());
                out.result(keys == null ? Collections.emptyList() : keys);
                return;
            }
            case Worker.MAP_VALUES: {
                List<Object> values = listOf(((MapState<Object, Object>) st).values());
                out.result(values == null ? Collections.emptyList() : values);
                return;
            }
            case Worker.MAP_IS_EMPTY:
                out.result(((MapState<Object, Object>) st).isEmpty());
                return;
            case Worker.REDUCING_GET:
                out.result(((ReducingState<Object>) st).get());
                return;
            case Worker.REDUCING_ADD:
                ((ReducingState<Object>) st).add(in.value());
                return;
            case Worker.AGG_GET:
                out.result(((AggregatingState<Object, Object>) st).get());
                return;
            case Worker.AGG_ADD:
                ((AggregatingState<Object, Object>) st).add(in.value());
                return;
            default:
                throw new IllegalArgumentException("unknown state opcode 0x"
                        + Integer.toHexString(opcode));
        }
    }

    /** A V2 read's elements as a list (null: no state, as V1's list get). */
    private static List<Object> listOf(Iterable<Object> items) {
        if (items == null) {
            return null;
        }
        List<Object> out = new ArrayList<>();
        for (Object item : items) {
            out.add(item);
        }
        return out.isEmpty() ? null : out;
    }

    /** FlinkBackend.register's descriptors, as State V2 descriptors. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private void register(ForStAsyncLane.V2 v2, List<ForStAsyncLane.Reg> regs, int sid,
                          int kind, String name, int valueType, int mapKeyType, int function,
                          StateTtlConfig ttl) throws Exception {
        if (opsStates.containsKey(sid)) {
            throw new IllegalArgumentException("state id " + sid + " is already registered");
        }
        TypeSerializer vs = FlinkBackend.serializer(valueType);
        if ((kind == FlinkBackend.REDUCING || kind == FlinkBackend.AGGREGATING)
                && valueType != Wire.LONG) {
            throw new IllegalArgumentException(
                    "state '" + name + "': the worker's reduce/aggregate functions take LONG values");
        }
        StateDescriptor desc;
        switch (kind) {
            case FlinkBackend.VALUE:
                desc = new ValueStateDescriptor<>(name, vs);
                break;
            case FlinkBackend.LIST:
                desc = new ListStateDescriptor<>(name, vs);
                break;
            case FlinkBackend.MAP:
                // no NullableSerializer (V1's map needs it for null values under TTL): V2's
                // map state writes a null flag of its own before every value
                desc = new MapStateDescriptor<>(name, FlinkBackend.serializer(mapKeyType), vs);
                break;
            case FlinkBackend.REDUCING:
                desc = new ReducingStateDescriptor<>(name, FlinkBackend.reducer(function),
                        LongSerializer.INSTANCE);
                break;
            case FlinkBackend.AGGREGATING:
                desc = new AggregatingStateDescriptor<>(name, FlinkBackend.aggregator(function),
                        LongSerializer.INSTANCE);
                break;
            default:
                throw new IllegalArgumentException("unknown state kind " + kind);
        }
        if (ttl != null) {
            desc.enableTimeToLive(ttl);
        }
        State state = v2.kb.getOrCreateKeyedState(VoidNamespace.INSTANCE,
                VoidNamespaceSerializer.INSTANCE, desc);
        regs.add(new ForStAsyncLane.Reg(kind, name, desc));
        opsStates.put(sid, new Object[] {kind, state});
    }
}
