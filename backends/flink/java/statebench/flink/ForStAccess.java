package statebench.flink;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.api.common.typeutils.base.MapSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.runtime.state.ListDelimitedSerializer;
import org.apache.flink.runtime.state.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.state.rocksdb.StatebenchRocksCensus;

import org.forstdb.ColumnFamilyHandle;
import org.forstdb.FlushOptions;
import org.forstdb.ReadOptions;
import org.forstdb.RocksDB;
import org.forstdb.RocksIterator;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * statebench's read-only door into what ForSt's keyed backends (the synchronous
 * ForStSyncKeyedStateBackend and the asynchronous ForStKeyedStateBackend) physically hold.
 *
 * <p>Why reflection: unlike Flink's RocksDB backend, ForSt's backends expose neither their DB
 * handle nor their column families (no getKvStateInformation, no getColumnFamilyHandle), and the
 * two backends live in different packages, so one helper in Flink's package cannot reach both.
 * The fields read here (the one {@code org.forstdb.RocksDB} field, {@code kvStateInformation}
 * and its ForStKvStateInfo's columnFamilyHandle / metaInfo) are those of Flink 2.3.0; a missing
 * one fails with its name. Nothing is written: TTL, cleanup and the compaction filter never see
 * these walks.
 */
final class ForStAccess {
    private ForStAccess() {}

    /** The backend's DB: the first field of type org.forstdb.RocksDB up its class chain. */
    static RocksDB db(Object backend) throws ReflectiveOperationException {
        for (Class<?> c = backend.getClass(); c != null; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (f.getType() == RocksDB.class) {
                    f.setAccessible(true);
                    return (RocksDB) f.get(backend);
                }
            }
        }
        throw new NoSuchFieldException("no org.forstdb.RocksDB field on " + backend.getClass());
    }

    /** kvStateInformation: state name -> ForStOperationUtils.ForStKvStateInfo. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> infos(Object backend) throws ReflectiveOperationException {
        for (Class<?> c = backend.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField("kvStateInformation");
                f.setAccessible(true);
                return (Map<String, Object>) f.get(backend);
            } catch (NoSuchFieldException ignored) {
                // up the chain
            }
        }
        throw new NoSuchFieldException("kvStateInformation of " + backend.getClass());
    }

    private static Object field(Object info, String name) throws ReflectiveOperationException {
        Field f = info.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(info);
    }

    static ColumnFamilyHandle handle(Object backend, String state)
            throws ReflectiveOperationException {
        Object info = infos(backend).get(state);
        return info == null ? null : (ColumnFamilyHandle) field(info, "columnFamilyHandle");
    }

    /** An integer ForSt property of one state's column family (0 when it has none yet). */
    static long property(Object backend, String state, String name) throws Exception {
        ColumnFamilyHandle h = handle(backend, state);
        return h == null ? 0L : db(backend).getLongProperty(h, name);
    }

    /** ForSt's own flush of every state's memtable. */
    static void flush(Object backend) throws Exception {
        RocksDB db = db(backend);
        try (FlushOptions options = new FlushOptions().setWaitForFlush(true)) {
            for (Object info : infos(backend).values()) {
                db.flush(options, (ColumnFamilyHandle) field(info, "columnFamilyHandle"));
            }
        }
    }

    /** ForSt's manual compaction of one state's column family (the V2 backend has no
     *  compactState; the V1 backend's compactState does the same compactRange). */
    static void compact(Object backend, String state) throws Exception {
        ColumnFamilyHandle h = handle(backend, state);
        if (h != null) {
            db(backend).compactRange(h);
        }
    }

    /** Entries physically in one state's column family (expired ones included). */
    static long rawEntries(Object backend, String state) throws Exception {
        ColumnFamilyHandle h = handle(backend, state);
        if (h == null) {
            return 0L;
        }
        long n = 0;
        try (ReadOptions options = new ReadOptions();
             RocksIterator it = db(backend).newIterator(h, options)) {
            for (it.seekToFirst(); it.isValid(); it.next()) {
                n++;
            }
        }
        return n;
    }

    /** As StatebenchRocksCensus.stats, over ForSt's DB (the same RocksDB statistics). */
    static double[] stats(Object backend) throws Exception {
        RocksDB db = db(backend);
        double flushes = 0;
        double allCount = 0;
        double readGb = 0;
        double writeGb = 0;
        double flushGb = 0;
        double memtables = 0;
        for (Object info : infos(backend).values()) {
            ColumnFamilyHandle h = (ColumnFamilyHandle) field(info, "columnFamilyHandle");
            Map<String, String> m = db.getMapProperty(h, "rocksdb.cfstats");
            flushes += number(m, "compaction.L0.CompCount");
            allCount += number(m, "compaction.Sum.CompCount");
            readGb += number(m, "compaction.Sum.ReadGB");
            writeGb += number(m, "compaction.Sum.WriteGB");
            flushGb += number(m, "compaction.L0.WriteGB");
            memtables += db.getLongProperty(h, "rocksdb.cur-size-all-mem-tables");
        }
        double files = 0;
        double sstBytes = 0;
        for (org.forstdb.LiveFileMetaData f : db.getLiveFilesMetaData()) {
            files++;
            sstBytes += f.size();
        }
        double gb = 1024.0 * 1024.0 * 1024.0;
        return new double[] {
            flushes, allCount - flushes, Math.round(readGb * gb),
            Math.round((writeGb - flushGb) * gb),
            flushGb > 0 ? writeGb / flushGb : Double.NaN, files, sstBytes, memtables,
        };
    }

    private static double number(Map<String, String> m, String key) {
        String v = m.get(key);
        return v == null ? 0.0 : Double.parseDouble(v);
    }

    /** Bytes of every regular file under a local folder (0 when it does not exist). */
    static long folderBytes(String folder) throws IOException {
        if (folder == null || folder.contains("://") && !folder.startsWith("file:")) {
            return 0L;
        }
        java.nio.file.Path root = Paths.get(folder.replaceFirst("^file:(//)?", ""));
        if (!Files.isDirectory(root)) {
            return 0L;
        }
        // a walk that goes on past files (and folders) a compaction deletes meanwhile:
        // Files.walk would throw at the first one (ForSt's V2 backend compacts while sampled)
        long[] total = new long[1];
        Files.walkFileTree(root, new java.nio.file.SimpleFileVisitor<java.nio.file.Path>() {
            @Override
            public java.nio.file.FileVisitResult visitFile(
                    java.nio.file.Path file, java.nio.file.attribute.BasicFileAttributes attrs) {
                if (attrs.isRegularFile()) {
                    total[0] += attrs.size();
                }
                return java.nio.file.FileVisitResult.CONTINUE;
            }

            @Override
            public java.nio.file.FileVisitResult visitFileFailed(java.nio.file.Path file,
                                                                 IOException gone) {
                return java.nio.file.FileVisitResult.CONTINUE; // deleted meanwhile
            }
        });
        return total[0];
    }

    /** As StatebenchRocksCensus.walk (the same key and value layout: ForSt's synchronous
     *  states are RocksDB's, ported), over ForSt's DB. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void walk(Object backend, String state, int kind, StatebenchRocksCensus.Visitor visitor)
            throws Exception {
        Object info = infos(backend).get(state);
        if (info == null) {
            return;
        }
        ColumnFamilyHandle h = (ColumnFamilyHandle) field(info, "columnFamilyHandle");
        TypeSerializer serializer =
                ((RegisteredKeyValueStateBackendMetaInfo) field(info, "metaInfo"))
                        .getStateSerializer();
        DataInputDeserializer in = new DataInputDeserializer();
        ListDelimitedSerializer lists = new ListDelimitedSerializer();
        byte[] lastKey = null;
        try (ReadOptions options = new ReadOptions();
             RocksIterator it = db(backend).newIterator(h, options)) {
            for (it.seekToFirst(); it.isValid(); it.next()) {
                byte[] raw = it.key();
                byte[] value = it.value();
                if (kind == 3) {
                    byte[] prefix = Arrays.copyOf(raw, raw.length - 4);
                    if (lastKey == null || !Arrays.equals(prefix, lastKey)) {
                        visitor.key();
                        lastKey = prefix;
                    }
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
