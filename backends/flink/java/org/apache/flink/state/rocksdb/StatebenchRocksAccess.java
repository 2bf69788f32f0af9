package org.apache.flink.state.rocksdb;

import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;

/**
 * statebench's door into package-private parts of Flink's RocksDB backend.
 *
 * <p>It lives in Flink's own package because incremental checkpointing is a package-private
 * setter on the builder and the DB handle / column families are package-visible on the backend
 * (the same trick apache/flink-benchmarks relies on through Flink's test utilities).
 */
public final class StatebenchRocksAccess {
    private StatebenchRocksAccess() {}

    /** Turns Flink's incremental (native SST) checkpoints on or off on a builder. */
    public static <K> RocksDBKeyedStateBackendBuilder<K> incremental(
            RocksDBKeyedStateBackendBuilder<K> builder, boolean enabled) {
        return builder.setEnableIncrementalCheckpointing(enabled);
    }

    /** Sum of an integer RocksDB property over the column family of one state. */
    public static long property(RocksDBKeyedStateBackend<?> backend, String state, String name)
            throws RocksDBException {
        ColumnFamilyHandle handle = backend.getColumnFamilyHandle(state);
        RocksDB db = backend.db;
        return handle == null ? 0L : db.getLongProperty(handle, name);
    }

    /** Flushes the memtables of every state's column family (RocksDB's own flush). */
    public static void flush(RocksDBKeyedStateBackend<?> backend) throws RocksDBException {
        RocksDB db = backend.db;
        try (org.rocksdb.FlushOptions options = new org.rocksdb.FlushOptions().setWaitForFlush(true)) {
            for (RocksDBKeyedStateBackend.RocksDbKvStateInfo info :
                    backend.getKvStateInformation().values()) {
                db.flush(options, info.columnFamilyHandle);
            }
        }
    }
}
