package statebench.flink;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.BooleanSerializer;
import org.apache.flink.api.common.typeutils.base.DoubleSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.api.java.typeutils.runtime.NullableSerializer;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.state.AbstractKeyedStateBackend;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.state.CompositeStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.LocalRecoveryConfig;
import org.apache.flink.runtime.state.SavepointResources;
import org.apache.flink.runtime.state.SavepointSnapshotStrategy;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.SnapshotStrategyRunner;
import org.apache.flink.runtime.state.UncompressedStreamCompressionDecorator;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStorageLocation;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStreamFactory;
import org.apache.flink.runtime.state.heap.HeapKeyedStateBackend;
import org.apache.flink.runtime.state.heap.HeapKeyedStateBackendBuilder;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSetFactory;
import org.apache.flink.runtime.state.metrics.LatencyTrackingStateConfig;
import org.apache.flink.runtime.state.metrics.SizeTrackingStateConfig;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend;
import org.apache.flink.state.rocksdb.PredefinedOptions;
import org.apache.flink.state.rocksdb.RocksDBConfigurableOptions;
import org.apache.flink.state.rocksdb.RocksDBKeyedStateBackend;
import org.apache.flink.state.rocksdb.RocksDBKeyedStateBackendBuilder;
import org.apache.flink.state.rocksdb.RocksDBOptionsFactory;
import org.apache.flink.state.rocksdb.RocksDBPriorityQueueConfig;
import org.apache.flink.state.rocksdb.RocksDBResourceContainer;
import org.apache.flink.state.rocksdb.StatebenchRocksAccess;
import org.apache.flink.state.forst.ForStConfigurableOptions;
import org.apache.flink.state.forst.ForStOptionsFactory;
import org.apache.flink.state.forst.ForStPathContainer;
import org.apache.flink.state.forst.ForStResourceContainer;
import org.apache.flink.state.forst.ForStStateBackend;
import org.apache.flink.state.forst.sync.ForStPriorityQueueConfig;
import org.apache.flink.state.forst.sync.ForStSyncKeyedStateBackend;
import org.apache.flink.state.forst.sync.ForStSyncKeyedStateBackendBuilder;
import org.apache.flink.core.execution.RecoveryClaimMode;

import java.io.File;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RunnableFuture;
import java.util.stream.Stream;

import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;

/**
 * One Flink 2.x keyed state backend (heap, RocksDB or ForSt's synchronous one), built directly as apache/flink-benchmarks'
 * StateBackendBenchmarkUtils does: no job, no mini-cluster, VoidNamespace for every state.
 */
final class FlinkBackend implements AutoCloseable {
    /**
     * Processing time for TTL, set by the caller: a logical clock the compaction filter reads too.
     *
     * <p>Deviation from Flink, on purpose: the thread running a checkpoint's asynchronous phase
     * is pinned to the clock the task had at the checkpoint's barrier ({@link #pin}), while the
     * task thread moves {@link #now} on with its records. Flink's full-snapshot TTL transformer
     * reads its TtlTimeProvider while it writes, i.e. at some wall time during the asynchronous
     * phase; under a logical clock that would make a full_snapshot checkpoint's size depend on
     * how far the task got meanwhile. Pinned, it is the same in every run (exact).
     */
    static final class LogicalTime implements TtlTimeProvider {
        volatile long now;
        private volatile Thread pinnedThread;
        private volatile long pinnedNow;

        @Override
        public long currentTimestamp() {
            Thread pinned = pinnedThread;
            if (pinned != null && pinned == Thread.currentThread()) {
                return pinnedNow;
            }
            return now;
        }

        /** The calling thread reads `at` until {@link #unpin} (one pinned thread at a time). */
        void pin(long at) {
            pinnedNow = at;
            pinnedThread = Thread.currentThread();
        }

        void unpin() {
            pinnedThread = null;
        }
    }

    /**
     * A checkpoint whose asynchronous phase (Flink's snapshot RunnableFuture) runs on the
     * backend's checkpoint thread while the task thread goes on with its records. The fields
     * below {@link #done} are written by that thread before it sets {@link #done}.
     */
    static final class Pending {
        final long id;
        final long syncNs;
        final long waitNs;
        final long clock;
        final RunnableFuture<SnapshotResult<KeyedStateHandle>> future;
        Future<?> task;
        volatile boolean done;
        long asyncNs;
        long asyncCpuNs;
        SnapshotResult<KeyedStateHandle> result;
        Throwable failure;

        Pending(long id, long syncNs, long waitNs, long clock,
                RunnableFuture<SnapshotResult<KeyedStateHandle>> future) {
            this.id = id;
            this.syncNs = syncNs;
            this.waitNs = waitNs;
            this.clock = clock;
            this.future = future;
        }

        /** The asynchronous phase, on the checkpoint thread: wall and thread CPU time. */
        void run(LogicalTime time) {
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            time.pin(clock);
            long cpu0 = mx.getCurrentThreadCpuTime();
            long start = System.nanoTime();
            try {
                future.run();
                result = future.get();
            } catch (Throwable t) {
                failure = t;
            } finally {
                asyncNs = System.nanoTime() - start;
                asyncCpuNs = mx.getCurrentThreadCpuTime() - cpu0;
                time.unpin();
                done = true;
            }
        }
    }

    /** Opening options (OPEN_BACKEND command). */
    static final class Options {
        boolean rocksdb;
        /** ForSt's synchronous keyed backend (V1 state API), see {@link #openForSt}. */
        boolean forst;
        /** ForSt: its primary ("remote") folder, a folder of its own (null: all local). */
        String primaryDir;
        boolean stringKeys;
        int maxParallelism = 128;
        int keyGroupStart;
        int keyGroupEnd = 127;
        String dir;
        long queryTimeAfterNumEntries = 1000L;
        long periodicCompactionMs = -1L;
        /** Flink configuration keys of the RocksDB backend (RocksDBConfigurableOptions) and
         *  their values, plus LEVEL0_TRIGGER, which Flink has no option for. */
        Map<String, String> rocksConf = new LinkedHashMap<>();
        boolean incrementalCheckpoints;
        /** ForSt's asynchronous V2 backend (OPEN_BACKEND kind 3): this FlinkBackend is an empty
         *  heap shell carrying the options, and {@link ForStAsyncLane} serves the event family
         *  on a V2 backend it builds from them. */
        boolean forstAsync;
        /** Checkpoint handles to restore from (the event lane's timed restore). */
        List<KeyedStateHandle> restore = Collections.emptyList();
    }

    /** A registered state and what its commands need to know about it. */
    static final class Registered {
        final int kind;
        final String name;
        final StateDescriptor<?, ?> descriptor;
        final State state;

        Registered(int kind, String name, StateDescriptor<?, ?> descriptor, State state) {
            this.kind = kind;
            this.name = name;
            this.descriptor = descriptor;
            this.state = state;
        }
    }

    /** The rocksConf key of RocksDB's level0_file_num_compaction_trigger (no Flink option). */
    static final String LEVEL0_TRIGGER = "statebench.level0-file-num-compaction-trigger";

    /** Sets level0_file_num_compaction_trigger on every column family, as a user's own
     *  RocksDBOptionsFactory would. */
    static final class Level0Trigger implements RocksDBOptionsFactory {
        private static final long serialVersionUID = 1L;
        private final int trigger;

        Level0Trigger(int trigger) {
            this.trigger = trigger;
        }

        @Override
        public DBOptions createDBOptions(DBOptions current, Collection<AutoCloseable> handles) {
            return current;
        }

        @Override
        public ColumnFamilyOptions createColumnOptions(
                ColumnFamilyOptions current, Collection<AutoCloseable> handles) {
            return current.setLevel0FileNumCompactionTrigger(trigger);
        }
    }

    static final int VALUE = 1;
    static final int LIST = 2;
    static final int MAP = 3;
    static final int REDUCING = 4;
    static final int AGGREGATING = 5;

    final LogicalTime time = new LogicalTime();
    final Options options;
    final AbstractKeyedStateBackend<Object> backend;
    private final CloseableRegistry registry = new CloseableRegistry();
    private final RocksDBResourceContainer resources;
    /** ForSt's resources (options, paths), closed with the backend; null on heap/RocksDB. */
    private ForStResourceContainer forstResources;
    final Map<Integer, Registered> states = new LinkedHashMap<>();
    /** The handles of the checkpoints taken, in order (the event lane's timed restore). */
    final List<KeyedStateHandle> checkpoints = new ArrayList<>();
    /** Asynchronous checkpoints completed, in order: [id, bytes, checkpointed bytes, sync ns,
     *  async ns, async thread CPU ns, ns the task waited at its barrier for the previous one,
     *  bytes referred to in place (ForSt, {@link #inPlace})]. */
    final List<long[]> asyncCheckpoints = new ArrayList<>();
    /** Checkpoints whose asynchronous phase may still run, oldest first (their phases run one
     *  after the other on the checkpoint thread). Read and written by the task thread only. */
    final ArrayDeque<Pending> inFlight = new ArrayDeque<>();
    /** The backend's checkpoint thread (one daemon thread, started on first use). */
    private ExecutorService checkpointThread;
    /** Closed first in {@link #close} (ForStAsyncLane's V2 backend goes with its shell). */
    final List<AutoCloseable> closeWith = new ArrayList<>();
    /** The same states indexed by id: the per-op lookup of the hot path, no boxing. */
    private Registered[] bySid = new Registered[16];

    @SuppressWarnings("unchecked")
    FlinkBackend(Options options) throws Exception {
        this.options = options;
        TypeSerializer<Object> keySerializer = (TypeSerializer<Object>) (TypeSerializer<?>)
                (options.stringKeys ? StringSerializer.INSTANCE : LongSerializer.INSTANCE);
        KeyGroupRange range = KeyGroupRange.of(options.keyGroupStart, options.keyGroupEnd);
        ClassLoader loader = FlinkBackend.class.getClassLoader();
        ExecutionConfig executionConfig = new ExecutionConfig();
        if (options.forst) {
            resources = null;
            backend = openForSt(options, keySerializer, range, loader, executionConfig);
            return;
        }
        if (!options.rocksdb) {
            resources = null;
            backend = new HeapKeyedStateBackendBuilder<>(
                    null, keySerializer, loader, options.maxParallelism, range, executionConfig,
                    time, LatencyTrackingStateConfig.disabled(), SizeTrackingStateConfig.disabled(),
                    options.restore, UncompressedStreamCompressionDecorator.INSTANCE,
                    LocalRecoveryConfig.BACKUP_AND_RECOVERY_DISABLED,
                    new HeapPriorityQueueSetFactory(range, options.maxParallelism, 128),
                    true, registry).build();
            return;
        }
        Configuration conf = new Configuration();
        conf.set(RocksDBConfigurableOptions.COMPACT_FILTER_QUERY_TIME_AFTER_NUM_ENTRIES,
                options.queryTimeAfterNumEntries);
        if (options.periodicCompactionMs >= 0) {
            conf.set(RocksDBConfigurableOptions.COMPACT_FILTER_PERIODIC_COMPACTION_TIME,
                    Duration.ofMillis(options.periodicCompactionMs));
        }
        RocksDBOptionsFactory factory = null;
        for (Map.Entry<String, String> e : options.rocksConf.entrySet()) {
            if (e.getKey().equals(LEVEL0_TRIGGER)) {
                factory = new Level0Trigger(Integer.parseInt(e.getValue()));
            } else {
                conf.set(ConfigOptions.key(e.getKey()).stringType().noDefaultValue(),
                        e.getValue());
            }
        }
        File base = new File(options.dir);
        if (!base.isDirectory() && !base.mkdirs()) {
            throw new IllegalArgumentException("cannot create RocksDB folder " + base);
        }
        resources = new RocksDBResourceContainer(conf, PredefinedOptions.DEFAULT, factory, null,
                base, false);
        RocksDBKeyedStateBackendBuilder<Object> builder = new RocksDBKeyedStateBackendBuilder<>(
                "statebench", loader, base, resources, name -> resources.getColumnOptions(), null,
                keySerializer, options.maxParallelism, range, executionConfig,
                LocalRecoveryConfig.BACKUP_AND_RECOVERY_DISABLED,
                RocksDBPriorityQueueConfig.buildWithPriorityQueueType(
                        EmbeddedRocksDBStateBackend.PriorityQueueStateType.ROCKSDB),
                time, LatencyTrackingStateConfig.disabled(), SizeTrackingStateConfig.disabled(),
                new UnregisteredMetricsGroup(), (name, value) -> {}, options.restore,
                UncompressedStreamCompressionDecorator.INSTANCE, registry);
        StatebenchRocksAccess.incremental(builder, options.incrementalCheckpoints);
        backend = builder.build();
    }

    /** The OPEN_BACKEND configuration key carrying ForSt's primary folder (Options.primaryDir;
     *  Flink's own key, as ForStStateBackend reads it). */
    static final String FORST_PRIMARY_DIR = "state.backend.forst.primary-dir";

    /** The rocksConf key of ForSt's level0_file_num_compaction_trigger (no Flink option). */
    static final String FORST_LEVEL0_TRIGGER = "statebench.forst.level0-file-num-compaction-trigger";

    /** level0_file_num_compaction_trigger on every ForSt column family (a ForStOptionsFactory,
     *  as a user would write one). */
    static final class ForStLevel0Trigger implements ForStOptionsFactory {
        private static final long serialVersionUID = 1L;
        private final int trigger;

        ForStLevel0Trigger(int trigger) {
            this.trigger = trigger;
        }

        @Override
        public org.forstdb.DBOptions createDBOptions(org.forstdb.DBOptions current,
                                                     Collection<AutoCloseable> handles) {
            return current;
        }

        @Override
        public org.forstdb.ColumnFamilyOptions createColumnOptions(
                org.forstdb.ColumnFamilyOptions current, Collection<AutoCloseable> handles) {
            return current.setLevel0FileNumCompactionTrigger(trigger);
        }
    }

    /**
     * ForSt's synchronous keyed backend (ForStSyncKeyedStateBackend, the V1 state API), built as
     * ForStStateBackend.createKeyedStateBackend builds it with
     * {@code state.backend.forst.sync.enforce-local: false}: the DB's working folder is
     * options.dir (local: ForSt's metadata, its file cache) and its files live on the primary
     * folder options.primaryDir (Flink's "remote" directory, reached through ForSt's
     * ForStFlinkFileSystem; any Flink file system URI works there). The compaction filter's
     * query interval and periodic compaction are per backend, as in RocksDB; rocksConf holds
     * ForSt's own configuration keys (backends.flink.register.forst_configuration).
     */
    @SuppressWarnings("unchecked")
    private AbstractKeyedStateBackend<Object> openForSt(
            Options options, TypeSerializer<Object> keySerializer, KeyGroupRange range,
            ClassLoader loader, ExecutionConfig executionConfig) throws Exception {
        org.forstdb.RocksDB.loadLibrary();
        Configuration conf = new Configuration();
        conf.set(ForStConfigurableOptions.COMPACT_FILTER_QUERY_TIME_AFTER_NUM_ENTRIES,
                options.queryTimeAfterNumEntries);
        if (options.periodicCompactionMs >= 0) {
            conf.set(ForStConfigurableOptions.COMPACT_FILTER_PERIODIC_COMPACTION_TIME,
                    Duration.ofMillis(options.periodicCompactionMs));
        }
        ForStOptionsFactory factory = null;
        for (Map.Entry<String, String> e : options.rocksConf.entrySet()) {
            if (e.getKey().equals(FORST_LEVEL0_TRIGGER)) {
                factory = new ForStLevel0Trigger(Integer.parseInt(e.getValue()));
            } else {
                conf.set(ConfigOptions.key(e.getKey()).stringType().noDefaultValue(),
                        e.getValue());
            }
        }
        File local = new File(options.dir);
        if (!local.isDirectory() && !local.mkdirs()) {
            throw new IllegalArgumentException("cannot create ForSt folder " + local);
        }
        Path localBase = new Path(local.getAbsoluteFile().toURI());
        Path remoteBase = null;
        if (options.primaryDir != null) {
            remoteBase = options.primaryDir.contains("://") ? new Path(options.primaryDir)
                    : new Path(new File(options.primaryDir).getAbsoluteFile().toURI());
        }
        ForStPathContainer paths = new ForStPathContainer(localBase, localBase,
                remoteBase, remoteBase);
        forstResources = new ForStResourceContainer(conf, factory, null, paths,
                RecoveryClaimMode.DEFAULT, null, new UnregisteredMetricsGroup(), false);
        ForStResourceContainer held = forstResources;
        ForStSyncKeyedStateBackendBuilder<Object> builder = new ForStSyncKeyedStateBackendBuilder<>(
                "statebench", loader, held, name -> held.getColumnOptions(), null, keySerializer,
                options.maxParallelism, range, executionConfig,
                LocalRecoveryConfig.BACKUP_AND_RECOVERY_DISABLED,
                ForStPriorityQueueConfig.buildWithPriorityQueueType(
                        ForStStateBackend.PriorityQueueStateType.ForStDB),
                time, LatencyTrackingStateConfig.disabled(), SizeTrackingStateConfig.disabled(),
                new UnregisteredMetricsGroup(), (name, value) -> {}, options.restore,
                UncompressedStreamCompressionDecorator.INSTANCE, registry);
        builder.setEnableIncrementalCheckpointing(options.incrementalCheckpoints);
        return (AbstractKeyedStateBackend<Object>) (AbstractKeyedStateBackend<?>) builder.build();
    }

    static TypeSerializer<?> serializer(int type) {
        switch (type) {
            case Wire.LONG:
                return LongSerializer.INSTANCE;
            case Wire.STRING:
                return StringSerializer.INSTANCE;
            case Wire.DOUBLE:
                return DoubleSerializer.INSTANCE;
            case Wire.BOOL:
                return BooleanSerializer.INSTANCE;
            default:
                throw new IllegalArgumentException("unsupported value type code " + type);
        }
    }

    /** The named Java functions reducing and aggregating states can use (LONG values). */
    static ReduceFunction<Long> reducer(int function) {
        switch (function) {
            case 1:
                return Long::sum;
            case 3:
                return Math::max;
            case 4:
                return Math::min;
            default:
                throw new IllegalArgumentException("unknown reduce function code " + function);
        }
    }

    static AggregateFunction<Long, Long, Long> aggregator(int function) {
        final boolean count = function == 2;
        if (function != 1 && function != 2) {
            throw new IllegalArgumentException("unknown aggregate function code " + function);
        }
        return new AggregateFunction<Long, Long, Long>() {
            @Override
            public Long createAccumulator() {
                return 0L;
            }

            @Override
            public Long add(Long value, Long accumulator) {
                return accumulator + (count ? 1L : value);
            }

            @Override
            public Long getResult(Long accumulator) {
                return accumulator;
            }

            @Override
            public Long merge(Long a, Long b) {
                return a + b;
            }
        };
    }

    /** The TTL fields that follow a command's ttl ms (update, visibility, flags, incremental
     *  size, per record, query time after num entries; REGISTER and the event lane's OPEN
     *  share them), as a StateTtlConfig; null when ttlMs is 0 (no TTL). */
    static StateTtlConfig readTtl(Wire.In in, long ttlMs) {
        int update = in.u8();
        int visibility = in.u8();
        int flags = in.u8();
        int incSize = in.i32();
        boolean perRecord = in.u8() == 1;
        long queryTime = in.i64();
        return ttlMs > 0 ? ttl(ttlMs, update, visibility, flags, incSize, perRecord, queryTime)
                : null;
    }

    /** TTL as the caller spelled it, 1:1 onto Flink's StateTtlConfig builder. */
    static StateTtlConfig ttl(long ttlMs, int update, int visibility, int flags, int incSize,
                              boolean incPerRecord, long queryTime) {
        StateTtlConfig.Builder b = StateTtlConfig.newBuilder(Duration.ofMillis(ttlMs))
                .setUpdateType(update == 2 ? StateTtlConfig.UpdateType.OnReadAndWrite
                        : StateTtlConfig.UpdateType.OnCreateAndWrite)
                .setStateVisibility(visibility == 2
                        ? StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
                        : StateTtlConfig.StateVisibility.NeverReturnExpired);
        if ((flags & 1) != 0) {
            b.disableCleanupInBackground();
        }
        if ((flags & 2) != 0) {
            b.cleanupFullSnapshot();
        }
        if ((flags & 4) != 0) {
            b.cleanupIncrementally(incSize, incPerRecord);
        }
        if ((flags & 8) != 0) {
            b.cleanupInRocksdbCompactFilter(queryTime);
        }
        return b.build();
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    void register(int sid, int kind, String name, int valueType, int mapKeyType, int function,
                  StateTtlConfig ttl) throws Exception {
        if (options.forstAsync) {
            throw new IllegalArgumentException("a forst-async backend's states live on its V2 "
                    + "backend (ForStAsyncLane, ForStAsyncOps), never on this shell");
        }
        if (states.containsKey(sid)) {
            throw new IllegalArgumentException("state id " + sid + " is already registered");
        }
        StateDescriptor<?, ?> desc;
        TypeSerializer vs = serializer(valueType);
        switch (kind) {
            case VALUE:
                desc = new ValueStateDescriptor<>(name, vs);
                break;
            case LIST:
                desc = new ListStateDescriptor<>(name, vs);
                break;
            case MAP:
                // statebench (like PyFlink) allows null map values; Flink's TTL map state on
                // RocksDB needs a null-capable value serializer for that (+1 byte per value).
                desc = new MapStateDescriptor<>(name, serializer(mapKeyType),
                        NullableSerializer.wrapIfNullIsNotSupported(vs, false));
                break;
            case REDUCING:
                requireLong(valueType, name);
                desc = new ReducingStateDescriptor<>(name, reducer(function), LongSerializer.INSTANCE);
                break;
            case AGGREGATING:
                requireLong(valueType, name);
                desc = new AggregatingStateDescriptor<>(name, aggregator(function),
                        LongSerializer.INSTANCE);
                break;
            default:
                throw new IllegalArgumentException("unknown state kind " + kind);
        }
        if (ttl != null) {
            desc.enableTimeToLive(ttl);
        }
        State state = backend.getPartitionedState(VoidNamespace.INSTANCE,
                VoidNamespaceSerializer.INSTANCE, (StateDescriptor) desc);
        Registered registered = new Registered(kind, name, desc, state);
        states.put(sid, registered);
        if (sid >= bySid.length) {
            bySid = java.util.Arrays.copyOf(bySid, Math.max(sid + 1, bySid.length * 2));
        }
        bySid[sid] = registered;
    }

    private static void requireLong(int valueType, String name) {
        if (valueType != Wire.LONG) {
            throw new IllegalArgumentException(
                    "state '" + name + "': the worker's reduce/aggregate functions take LONG values");
        }
    }

    Registered state(int sid, int kind) {
        Registered r = sid < bySid.length ? bySid[sid] : null;
        if (r == null) {
            throw new IllegalArgumentException("state id " + sid + " is not registered");
        }
        if (kind != 0 && r.kind != kind) {
            throw new IllegalArgumentException("state '" + r.name + "' is not of the command's kind");
        }
        return r;
    }

    /** Keys holding the state physically (expired or not; a map counts once per key). */
    long keys(String name) {
        try (Stream<Object> s = backend.getKeys(name, VoidNamespace.INSTANCE)) {
            return s.count();
        }
    }

    /** [Flink's numKeyValueStateEntries(), {state name: keys}] */
    List<Object> counts() {
        Map<Object, Object> perState = new LinkedHashMap<>();
        for (Registered r : states.values()) {
            perState.put(r.name, keys(r.name));
        }
        List<Object> out = new ArrayList<>();
        out.add((long) numEntries());
        out.add(perState);
        return out;
    }

    int numEntries() {
        if (backend instanceof HeapKeyedStateBackend) {
            return ((HeapKeyedStateBackend<?>) backend).numKeyValueStateEntries();
        }
        if (backend instanceof ForStSyncKeyedStateBackend) {
            return ((ForStSyncKeyedStateBackend<?>) backend).numKeyValueStateEntries();
        }
        return ((RocksDBKeyedStateBackend<?>) backend).numKeyValueStateEntries();
    }

    /** RocksDB/ForSt: Flink's own manual compaction of every state's column family; heap:
     *  nothing. */
    void compact() throws Exception {
        if (backend instanceof ForStSyncKeyedStateBackend) {
            ForStSyncKeyedStateBackend<?> forst = (ForStSyncKeyedStateBackend<?>) backend;
            for (Registered r : states.values()) {
                forst.compactState(r.descriptor);
            }
        }
        if (backend instanceof RocksDBKeyedStateBackend) {
            RocksDBKeyedStateBackend<?> rocks = (RocksDBKeyedStateBackend<?>) backend;
            for (Registered r : states.values()) {
                rocks.compactState(r.descriptor);
            }
        }
    }

    /** RocksDB/ForSt: flush every state's memtable; heap: nothing. */
    void flush() throws Exception {
        if (backend instanceof ForStSyncKeyedStateBackend) {
            ForStAccess.flush(backend);
        }
        if (backend instanceof RocksDBKeyedStateBackend) {
            StatebenchRocksAccess.flush((RocksDBKeyedStateBackend<?>) backend);
        }
    }

    /** RocksDB: {state: {property: value}} for the properties asked; heap: empty. */
    Map<Object, Object> properties(List<String> names) throws Exception {
        Map<Object, Object> out = new LinkedHashMap<>();
        if (backend instanceof ForStSyncKeyedStateBackend) {
            for (Registered r : states.values()) {
                Map<Object, Object> props = new LinkedHashMap<>();
                for (String p : names) {
                    props.put(p, ForStAccess.property(backend, r.name, p));
                }
                out.put(r.name, props);
            }
        }
        if (backend instanceof RocksDBKeyedStateBackend) {
            RocksDBKeyedStateBackend<?> rocks = (RocksDBKeyedStateBackend<?>) backend;
            for (Registered r : states.values()) {
                Map<Object, Object> props = new LinkedHashMap<>();
                for (String p : names) {
                    props.put(p, StatebenchRocksAccess.property(rocks, r.name, p));
                }
                out.put(r.name, props);
            }
        }
        return out;
    }

    /**
     * Where a snapshot's files go: an FsCheckpointStreamFactory over `folder` (its shared files
     * under folder/shared). ForSt gets the FsCheckpointStorageLocation a Flink task gets from
     * its checkpoint storage, the one kind of factory ForSt reuses its own files with: when its
     * primary folder lies under folder/shared (Flink's primary-dir: checkpoint-dir), a
     * checkpoint refers to the DB's SST files instead of copying them.
     */
    private FsCheckpointStreamFactory streamFactory(String folder) throws Exception {
        File dir = new File(folder).getAbsoluteFile();
        File shared = new File(dir, "shared");
        File owned = new File(dir, "taskowned");
        if (!shared.isDirectory() && !shared.mkdirs()) {
            throw new IllegalArgumentException("cannot create snapshot folder " + shared);
        }
        if (options.forst) {
            if (!owned.isDirectory() && !owned.mkdirs()) {
                throw new IllegalArgumentException("cannot create snapshot folder " + owned);
            }
            // file: URIs, as ForSt names its primary folder (it compares the two as strings)
            return new FsCheckpointStorageLocation(FileSystem.getLocalFileSystem(),
                    new Path(dir.toURI()), new Path(shared.toURI()), new Path(owned.toURI()),
                    CheckpointStorageLocationReference.getDefault(), 0, 4096);
        }
        return new FsCheckpointStreamFactory(
                FileSystem.getLocalFileSystem(), new Path(dir.toURI()), new Path(shared.toURI()),
                0, 4096);
    }

    /**
     * Flink's own snapshot into an FsCheckpointStreamFactory over `folder`: a checkpoint (type 0)
     * or a canonical savepoint (type 1), both phases on the calling thread (after any
     * asynchronous checkpoint in flight completed). Returns [state bytes, checkpointed (uploaded)
     * bytes, synchronous ns, asynchronous ns, bytes referred to in place ({@link #inPlace})].
     */
    List<Object> snapshot(long checkpointId, String folder, int type) throws Exception {
        completePending();
        FsCheckpointStreamFactory factory = streamFactory(folder);
        long start = System.nanoTime();
        RunnableFuture<SnapshotResult<KeyedStateHandle>> future;
        if (type == 1) {
            CheckpointOptions opts = CheckpointOptions.forConfig(
                    SavepointType.savepoint(SavepointFormatType.CANONICAL),
                    CheckpointStorageLocationReference.getDefault(), true, false, 0L);
            SavepointResources<Object> resources = backend.savepoint();
            future = new SnapshotStrategyRunner<>("statebench-savepoint",
                    new SavepointSnapshotStrategy<>(resources.getSnapshotResources()), registry,
                    resources.getPreferredSnapshotExecutionType())
                    .snapshot(checkpointId, checkpointId, factory, opts);
        } else {
            future = backend.snapshot(checkpointId, checkpointId, factory,
                    CheckpointOptions.forCheckpointWithDefaultLocation());
        }
        long sync = System.nanoTime() - start;
        long asyncStart = System.nanoTime();
        future.run();
        SnapshotResult<KeyedStateHandle> result = future.get();
        long async = System.nanoTime() - asyncStart;
        if (type == 0) {
            backend.notifyCheckpointComplete(checkpointId);
        }
        KeyedStateHandle handle = result.getJobManagerOwnedSnapshot();
        if (type == 0 && handle != null) {
            checkpoints.add(handle);
        }
        List<Object> out = new ArrayList<>();
        out.add(size(handle));
        out.add(checkpointed(handle));
        out.add(sync);
        out.add(async);
        out.add(inPlace(handle));
        return out;
    }

    /**
     * ForSt: bytes of this checkpoint's new shared files that it refers to in place on the
     * primary folder instead of copying them (ForSt's file reuse; Flink's checkpointed size
     * counts them as new all the same). 0 on the other backends, and when the primary folder is
     * not a local one.
     */
    long inPlace(KeyedStateHandle handle) {
        if (!options.forst || options.primaryDir == null || options.primaryDir.contains("://")
                || !(handle instanceof IncrementalRemoteKeyedStateHandle)) {
            return 0L;
        }
        String root = new File(options.primaryDir).getAbsoluteFile().toURI().getPath();
        long bytes = 0;
        for (IncrementalKeyedStateHandle.HandleAndLocalPath p
                : ((IncrementalRemoteKeyedStateHandle) handle).getSharedState()) {
            StreamStateHandle h = p.getHandle();
            if (h instanceof FileStateHandle
                    && ((FileStateHandle) h).getFilePath().toUri().getPath().startsWith(root)) {
                bytes += h.getStateSize();
            }
        }
        return bytes;
    }

    private static long size(KeyedStateHandle handle) {
        return handle == null ? 0L : handle.getStateSize();
    }

    private static long checkpointed(KeyedStateHandle handle) {
        return handle instanceof CompositeStateHandle
                ? ((CompositeStateHandle) handle).getCheckpointedSize() : size(handle);
    }

    /**
     * A checkpoint as a Flink task takes it at a barrier (the task thread calls this): while
     * `maxInFlight` checkpoints' asynchronous phases still run, wait for the oldest (Flink's
     * default max concurrent checkpoints is 1: wait for the previous one), run the synchronous
     * phase (backend.snapshot(), which returns the asynchronous phase as a RunnableFuture), hand
     * the future to the backend's checkpoint thread and return at once. Returns [synchronous ns,
     * ns waited for earlier checkpoints].
     */
    List<Object> checkpointAsync(long checkpointId, String folder, int maxInFlight)
            throws Exception {
        if (maxInFlight < 1) {
            throw new IllegalArgumentException("max checkpoints in flight must be >= 1, got "
                    + maxInFlight);
        }
        long waitStart = System.nanoTime();
        while (inFlight.size() >= maxInFlight) {
            completeOldest();
        }
        long wait = System.nanoTime() - waitStart;
        FsCheckpointStreamFactory factory = streamFactory(folder);
        long start = System.nanoTime();
        RunnableFuture<SnapshotResult<KeyedStateHandle>> future = backend.snapshot(checkpointId,
                checkpointId, factory, CheckpointOptions.forCheckpointWithDefaultLocation());
        long sync = System.nanoTime() - start;
        Pending p = new Pending(checkpointId, sync, wait, time.now, future);
        if (checkpointThread == null) {
            checkpointThread = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "statebench-checkpoint-async");
                t.setDaemon(true);
                return t;
            });
        }
        p.task = checkpointThread.submit(() -> p.run(time));
        inFlight.addLast(p);
        List<Object> out = new ArrayList<>();
        out.add(sync);
        out.add(wait);
        return out;
    }

    /** On the task thread: waits for every checkpoint in flight and completes each. */
    void completePending() throws Exception {
        while (!inFlight.isEmpty()) {
            completeOldest();
        }
    }

    /** On the task thread: completes the checkpoints in flight whose asynchronous phase
     *  finished (oldest first); returns whether any still runs. */
    boolean completeDone() throws Exception {
        while (!inFlight.isEmpty() && inFlight.peekFirst().done) {
            completeOldest();
        }
        return !inFlight.isEmpty();
    }

    /**
     * On the task thread: waits for the oldest checkpoint in flight, then completes it as
     * Flink's task does on the completion notification (notifyCheckpointComplete; its handle
     * kept for the timed restore, its numbers in {@link #asyncCheckpoints}).
     */
    private void completeOldest() throws Exception {
        Pending p = inFlight.peekFirst();
        p.task.get();
        inFlight.pollFirst();
        if (p.failure != null) {
            throw new IllegalStateException("the asynchronous phase of checkpoint " + p.id
                    + " failed", p.failure);
        }
        backend.notifyCheckpointComplete(p.id);
        KeyedStateHandle handle = p.result.getJobManagerOwnedSnapshot();
        if (handle != null) {
            checkpoints.add(handle);
        }
        asyncCheckpoints.add(new long[] {p.id, size(handle), checkpointed(handle), p.syncNs,
                p.asyncNs, p.asyncCpuNs, p.waitNs, inPlace(handle)});
    }

    @Override
    public void close() throws Exception {
        try {
            for (AutoCloseable c : closeWith) {
                c.close();
            }
            closeWith.clear();
            for (Pending p : inFlight) {  // never dispose a backend under a running snapshot
                try {
                    p.task.get();
                } catch (Exception ignored) {
                    // closing anyway: the checkpoint is abandoned
                }
            }
            inFlight.clear();
            if (checkpointThread != null) {
                checkpointThread.shutdownNow();
            }
            backend.dispose();
            registry.close();
        } finally {
            if (resources != null) {
                resources.close();
            }
            if (forstResources != null) {
                forstResources.close();
            }
        }
    }
}
