package statebench.flink;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.StateEntry;
import org.apache.flink.runtime.state.heap.HeapKeyedStateBackend;
import org.apache.flink.runtime.state.heap.StateTable;
import org.apache.flink.runtime.state.ttl.TtlValue;
import org.apache.flink.state.rocksdb.RocksDBKeyedStateBackend;
import org.apache.flink.state.rocksdb.StatebenchRocksAccess;
import org.apache.flink.state.rocksdb.StatebenchRocksCensus;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A state sample as workloads/run/metrics.py's scan_states takes it, over what Flink physically
 * holds: every stored unit (value, list element, map entry) classified live or expired at `now`
 * by its TTL timestamp, the same logical bytes (key 8 + TTL timestamp 8 + map key 4 + value)
 * and the logical bytes of the expired units,
 * and physical bytes (heap: the serialized size of every entry with the state's own
 * serializers; RocksDB and ForSt: SST files + memtables of the states' column families). Read-only: no
 * state access goes through the TTL layer, so sampling never cleans up.
 */
final class Census implements StatebenchRocksCensus.Visitor {
    static final int KEY_BYTES = 8;
    static final int TS_BYTES = 8;
    static final int MAP_KEY_BYTES = 4;

    private final long horizon;
    private final boolean ttl;
    long live;
    long expired;
    long logicalBytes;
    long expiredBytes;

    private Census(long ttlMs, long now) {
        this.ttl = ttlMs > 0;
        this.horizon = now - ttlMs; // a unit written at ts is live iff ts > horizon
    }

    /** A census at `now` for a walk of the caller's own (ForStAsyncLane's V2 layouts). */
    static Census create(long ttlMs, long now) {
        return new Census(ttlMs, now);
    }

    /**
     * [live, expired, logical, expired logical, physical bytes] of every state at `now`, then
     * the RocksDB statistics list (empty on heap, see StatebenchRocksCensus.stats), then the
     * bytes on disk [local working folder, primary folder] (ForSt only, else empty).
     */
    static List<Object> take(FlinkBackend b, long ttlMs, long now) throws Exception {
        Census c = new Census(ttlMs, now);
        long physical = 0;
        List<Object> rocksStats = new ArrayList<>();
        List<Object> storage = new ArrayList<>();
        if (b.backend instanceof RocksDBKeyedStateBackend) {
            for (double v : StatebenchRocksCensus.stats((RocksDBKeyedStateBackend<?>) b.backend)) {
                rocksStats.add(v);
            }
        }
        if (b.options.forst) {
            for (double v : ForStAccess.stats(b.backend)) {
                rocksStats.add(v);
            }
            for (FlinkBackend.Registered r : b.states.values()) {
                ForStAccess.walk(b.backend, r.name, r.kind, c);
                physical += ForStAccess.property(b.backend, r.name, "rocksdb.total-sst-files-size")
                        + ForStAccess.property(b.backend, r.name, "rocksdb.cur-size-all-mem-tables");
            }
            // files on disk: the local working folder (metadata, file cache) and the primary
            storage.add(ForStAccess.folderBytes(b.options.dir));
            storage.add(ForStAccess.folderBytes(b.options.primaryDir));
        } else if (b.backend instanceof RocksDBKeyedStateBackend) {
            RocksDBKeyedStateBackend<?> rocks = (RocksDBKeyedStateBackend<?>) b.backend;
            for (FlinkBackend.Registered r : b.states.values()) {
                StatebenchRocksCensus.walk(rocks, r.name, r.kind, c);
                physical += StatebenchRocksAccess.property(rocks, r.name, "rocksdb.total-sst-files-size")
                        + StatebenchRocksAccess.property(rocks, r.name, "rocksdb.cur-size-all-mem-tables");
            }
        } else {
            physical = c.heap((HeapKeyedStateBackend<?>) b.backend, b);
        }
        List<Object> out = new ArrayList<>();
        out.add(c.live);
        out.add(c.expired);
        out.add(c.logicalBytes);
        out.add(c.expiredBytes);
        out.add(physical);
        out.add(rocksStats);
        out.add(storage);
        return out;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private long heap(HeapKeyedStateBackend<?> heap, FlinkBackend b) throws Exception {
        Field field = HeapKeyedStateBackend.class.getDeclaredField("registeredKVStates");
        field.setAccessible(true);
        Map<String, StateTable> tables = (Map<String, StateTable>) field.get(heap);
        DataOutputSerializer out = new DataOutputSerializer(256);
        long physical = 0;
        for (FlinkBackend.Registered r : b.states.values()) {
            StateTable table = tables.get(r.name);
            if (table == null) {
                continue;
            }
            TypeSerializer keySer = table.getKeySerializer();
            TypeSerializer stateSer = table.getStateSerializer();
            for (Object o : (Iterable<Object>) table) {
                StateEntry entry = (StateEntry) o;
                Object state = entry.getState();
                key();
                if (r.kind == FlinkBackend.LIST) {
                    for (Object item : (List<Object>) state) {
                        unit(item, false);
                    }
                } else if (r.kind == FlinkBackend.MAP) {
                    for (Object item : ((Map<Object, Object>) state).values()) {
                        unit(item, true);
                    }
                } else {
                    unit(state, false);
                }
                out.clear();
                keySer.serialize(entry.getKey(), out);
                stateSer.serialize(state, out);
                physical += out.length();
            }
        }
        return physical;
    }

    @Override
    public void key() {
        logicalBytes += KEY_BYTES;
    }

    @Override
    public void unit(Object unit, boolean isMap) {
        long extra = isMap ? MAP_KEY_BYTES : 0;
        if (ttl && unit instanceof TtlValue) {
            TtlValue<?> t = (TtlValue<?>) unit;
            long size = extra + TS_BYTES + valueBytes(t.getUserValue());
            if (t.getLastAccessTimestamp() > horizon) {
                live++;
            } else {
                expired++;
                expiredBytes += size;
            }
            logicalBytes += size;
        } else {
            live++;
            logicalBytes += extra + valueBytes(unit);
        }
    }

    static long valueBytes(Object value) {
        if (value == null) {
            return 0;
        }
        if (value instanceof String) {
            return ((String) value).length(); // payload strings are ASCII
        }
        if (value instanceof byte[]) {
            return ((byte[]) value).length;
        }
        return 8;
    }
}
