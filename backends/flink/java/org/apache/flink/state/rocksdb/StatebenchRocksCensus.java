package org.apache.flink.state.rocksdb;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.api.common.typeutils.base.MapSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.runtime.state.ListDelimitedSerializer;
import org.apache.flink.runtime.state.RegisteredKeyValueStateBackendMetaInfo;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksIterator;

import java.util.Arrays;
import java.util.List;

/**
 * statebench's read-only walk over what Flink's RocksDB backend physically holds for one state
 * (memtables and SST files, expired entries included), decoded with the state's own registered
 * serializers (TtlSerializer when TTL is on). It lives in Flink's package because the DB handle
 * and the state meta information are package-visible. Nothing is written, so TTL, cleanup and
 * the compaction filter never see the walk.
 */
public final class StatebenchRocksCensus {
    private StatebenchRocksCensus() {}

    /** Receives each keyed container (once per Flink key) and each stored unit in it. */
    public interface Visitor {
        void key();

        /** A stored unit (a TtlValue with TTL, else the user value); map units with isMap. */
        void unit(Object unit, boolean isMap);
    }

    private static final double GB = 1024.0 * 1024.0 * 1024.0;

    /**
     * What RocksDB did and holds, over the task's whole DB: [flushes, compactions, compaction
     * bytes read, compaction bytes written, write amplification (NaN before the first flush),
     * SST files, SST bytes, memtable bytes]. From the "rocksdb.cfstats" map of each state's
     * column family (statistics are off in Flink's default options): its L0 row counts the
     * flushes and their bytes, the Sum row flushes and compactions (RocksDB reports GB with six
     * decimals, so the byte counts are exact to ~1 KB); write amplification is RocksDB's own
     * Sum definition, bytes written by flushes and compactions / bytes flushed.
     */
    public static double[] stats(RocksDBKeyedStateBackend<?> backend) throws Exception {
        double flushes = 0;
        double allCount = 0;
        double readGb = 0;
        double writeGb = 0;
        double flushGb = 0;
        double memtables = 0;
        for (RocksDBKeyedStateBackend.RocksDbKvStateInfo info
                : backend.getKvStateInformation().values()) {
            java.util.Map<String, String> m =
                    backend.db.getMapProperty(info.columnFamilyHandle, "rocksdb.cfstats");
            flushes += number(m, "compaction.L0.CompCount");
            allCount += number(m, "compaction.Sum.CompCount");
            readGb += number(m, "compaction.Sum.ReadGB");
            writeGb += number(m, "compaction.Sum.WriteGB");
            flushGb += number(m, "compaction.L0.WriteGB");
            memtables += backend.db.getLongProperty(info.columnFamilyHandle,
                    "rocksdb.cur-size-all-mem-tables");
        }
        double files = 0;
        double sstBytes = 0;
        for (org.rocksdb.LiveFileMetaData f : backend.db.getLiveFilesMetaData()) {
            files++;
            sstBytes += f.size();
        }
        return new double[] {
            flushes, allCount - flushes, Math.round(readGb * GB), Math.round((writeGb - flushGb) * GB),
            flushGb > 0 ? writeGb / flushGb : Double.NaN, files, sstBytes, memtables,
        };
    }

    private static double number(java.util.Map<String, String> m, String key) {
        String v = m.get(key);
        return v == null ? 0.0 : Double.parseDouble(v);
    }

    /** Walks the state named `state` (kind: 1 value, 2 list, 3 map, 4 reducing, 5 aggregating). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static void walk(RocksDBKeyedStateBackend<?> backend, String state, int kind,
                            Visitor visitor) throws Exception {
        RocksDBKeyedStateBackend.RocksDbKvStateInfo info = backend.getKvStateInformation().get(state);
        if (info == null) {
            return;
        }
        TypeSerializer serializer =
                ((RegisteredKeyValueStateBackendMetaInfo) info.metaInfo).getStateSerializer();
        DataInputDeserializer in = new DataInputDeserializer();
        ListDelimitedSerializer lists = new ListDelimitedSerializer();
        byte[] lastKey = null;
        try (ReadOptions options = new ReadOptions();
             RocksIterator it = backend.db.newIterator(info.columnFamilyHandle, options)) {
            for (it.seekToFirst(); it.isValid(); it.next()) {
                byte[] raw = it.key();
                byte[] value = it.value();
                if (kind == 3) {
                    // one RocksDB entry per map entry: the Flink key is the raw key without the
                    // trailing 4-byte (int) user key
                    byte[] prefix = Arrays.copyOf(raw, raw.length - 4);
                    if (lastKey == null || !Arrays.equals(prefix, lastKey)) {
                        visitor.key();
                        lastKey = prefix;
                    }
                    // RocksDBMapState: a null flag byte, then the (TTL) value
                    in.setBuffer(value, 1, value.length - 1);
                    Object unit = value[0] != 0 ? null
                            : ((MapSerializer) serializer).getValueSerializer().deserialize(in);
                    visitor.unit(unit, true);
                } else if (kind == 2) {
                    visitor.key();
                    List<Object> items = lists.deserializeList(value,
                            ((ListSerializer) serializer).getElementSerializer());
                    for (Object item : items) {
                        visitor.unit(item, false);
                    }
                } else {
                    visitor.key();
                    in.setBuffer(value);
                    visitor.unit(serializer.deserialize(in), false);
                }
            }
        }
    }
}
