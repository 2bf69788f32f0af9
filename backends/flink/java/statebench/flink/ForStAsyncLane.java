package statebench.flink;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.operators.MailboxExecutor;
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
import org.apache.flink.api.common.state.v2.StateIterator;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.RecoveryClaimMode;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.asyncprocessing.EpochManager;
import org.apache.flink.runtime.asyncprocessing.RecordContext;
import org.apache.flink.runtime.asyncprocessing.StateExecutionController;
import org.apache.flink.runtime.asyncprocessing.declare.DeclarationManager;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.state.CompositeStateHandle;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.ListDelimitedSerializer;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStorageLocation;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.runtime.state.v2.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.state.forst.ForStConfigurableOptions;
import org.apache.flink.state.forst.ForStKeyedStateBackend;
import org.apache.flink.state.forst.ForStKeyedStateBackendBuilder;
import org.apache.flink.state.forst.ForStOptionsFactory;
import org.apache.flink.state.forst.ForStPathContainer;
import org.apache.flink.state.forst.ForStResourceContainer;
import org.apache.flink.state.forst.ForStStateBackend;
import org.apache.flink.state.forst.sync.ForStPriorityQueueConfig;
import org.apache.flink.streaming.runtime.tasks.StreamTaskActionExecutor;
import org.apache.flink.streaming.runtime.tasks.mailbox.MailboxExecutorImpl;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailboxImpl;

import org.forstdb.ColumnFamilyHandle;
import org.forstdb.ReadOptions;
import org.forstdb.RocksIterator;

import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RunnableFuture;

/**
 * The workload-event family (the layouts of {@link Events}, opcodes 0x40-0x4F) on ForSt's
 * asynchronous keyed backend, ForStKeyedStateBackend, through the State V2 API: the
 * {@code flink-forst-async} lane.
 *
 * <p>The worker routes the event family here when its backend was opened with kind 3
 * ("forst-async"; FlinkBackend.Options.forstAsync): that FlinkBackend is an empty shell carrying
 * the task's options (folders, key groups, compaction filter, [rocksdb] options), and EV_OPEN
 * builds the V2 backend from them, as Flink's own ForSt tests drive it (ForStStateTestBase): a
 * StateExecutionController (Flink's asynchronous execution controller for state) over the
 * backend's StateExecutor, with a mailbox executor on this (the task's) thread and ForSt's
 * executor threads.
 *
 * <p>EV_APPLY runs each record as AbstractAsyncStateStreamOperator does: a record context per
 * record (its key, and its timestamp as the record), the record's State V2 requests issued
 * through their async methods with the lane's bookkeeping in the futures' callbacks, the context
 * released; at the end of the batch the controller drains every record in flight. The
 * controller keeps record order per key (a key's next record waits until the previous one
 * finished). The TTL clock is the record's: the time provider answers, on the task thread, the
 * timestamp of the record context the controller has current (callbacks run with their record's
 * context), so a read checked in its callback sees its own record's time, as the synchronous
 * lanes do. Checkpoints run V2's snapshot (ForStKeyedStateBackend.snapshot) after the drain, on
 * the lane's checkpoint thread (as FlinkBackend.checkpointAsync); EV_RESTORE builds a fresh V2
 * backend from the last checkpoint's handle and registers the states again.
 */
final class ForStAsyncLane implements CommandFamily {
    /** The record of a record context: its TTL time. */
    static final class Stamp {
        final long t;

        Stamp(long t) {
            this.t = t;
        }
    }

    /** TTL time: the current record context's time on the task thread, else the lane's clock. */
    static final class RecordTime implements TtlTimeProvider {
        volatile long now;
        final Thread task = Thread.currentThread();
        StateExecutionController<Object> aec;

        @Override
        public long currentTimestamp() {
            if (Thread.currentThread() == task && aec != null) {
                RecordContext<Object> c = aec.getCurrentContext();
                if (c != null && c.getRecord() instanceof Stamp) {
                    return ((Stamp) c.getRecord()).t;
                }
            }
            return now;
        }
    }

    /** One V2 backend with its controller, resources and folders. */
    static final class V2 implements AutoCloseable {
        final RecordTime time = new RecordTime();
        final ForStResourceContainer res;
        final CloseableRegistry registry = new CloseableRegistry();
        final ForStKeyedStateBackend<Object> kb;
        final StateExecutionController<Object> aec;

        @SuppressWarnings("unchecked")
        V2(FlinkBackend.Options o, String dir, String primary, List<KeyedStateHandle> restore)
                throws Exception {
            TypeSerializer<Object> keys = (TypeSerializer<Object>) (TypeSerializer<?>)
                    (o.stringKeys ? StringSerializer.INSTANCE : LongSerializer.INSTANCE);
            org.forstdb.RocksDB.loadLibrary();
            Configuration conf = new Configuration();
            conf.set(ForStConfigurableOptions.COMPACT_FILTER_QUERY_TIME_AFTER_NUM_ENTRIES,
                    o.queryTimeAfterNumEntries);
            if (o.periodicCompactionMs >= 0) {
                conf.set(ForStConfigurableOptions.COMPACT_FILTER_PERIODIC_COMPACTION_TIME,
                        Duration.ofMillis(o.periodicCompactionMs));
            }
            ForStOptionsFactory factory = null;
            for (Map.Entry<String, String> e : o.rocksConf.entrySet()) {
                if (e.getKey().equals(FlinkBackend.FORST_LEVEL0_TRIGGER)) {
                    factory = new FlinkBackend.ForStLevel0Trigger(Integer.parseInt(e.getValue()));
                } else {
                    conf.set(ConfigOptions.key(e.getKey()).stringType().noDefaultValue(),
                            e.getValue());
                }
            }
            File local = new File(dir);
            if (!local.isDirectory() && !local.mkdirs()) {
                throw new IllegalArgumentException("cannot create ForSt folder " + local);
            }
            Path localBase = new Path(local.getAbsoluteFile().toURI());
            Path remote = null;
            if (primary != null) {
                remote = primary.contains("://") ? new Path(primary)
                        : new Path(new File(primary).getAbsoluteFile().toURI());
            }
            res = new ForStResourceContainer(conf, factory, null,
                    new ForStPathContainer(localBase, localBase, remote, remote),
                    RecoveryClaimMode.DEFAULT, null, new UnregisteredMetricsGroup(), false);
            ForStKeyedStateBackendBuilder<Object> builder = new ForStKeyedStateBackendBuilder<>(
                    "statebench-v2", ForStAsyncLane.class.getClassLoader(), res,
                    name -> res.getColumnOptions(), keys, o.maxParallelism,
                    KeyGroupRange.of(o.keyGroupStart, o.keyGroupEnd), new ExecutionConfig(),
                    ForStPriorityQueueConfig.buildWithPriorityQueueType(
                            ForStStateBackend.PriorityQueueStateType.ForStDB),
                    time, new UnregisteredMetricsGroup(), (name, value) -> {}, restore, registry);
            // package-private in Flink 2.3 (ForStStateBackend calls it with its setting)
            Method incremental = ForStKeyedStateBackendBuilder.class.getDeclaredMethod(
                    "setEnableIncrementalCheckpointing", boolean.class);
            incremental.setAccessible(true);
            incremental.invoke(builder, o.incrementalCheckpoints);
            kb = builder.build();
            MailboxExecutor mailbox = new MailboxExecutorImpl(new TaskMailboxImpl(), 0,
                    StreamTaskActionExecutor.IMMEDIATE);
            aec = new StateExecutionController<>(mailbox, (message, error) -> {
                throw new IllegalStateException("State V2 request failed: " + message, error);
            }, kb.createStateExecutor(), new DeclarationManager(),
                    EpochManager.ParallelMode.SERIAL_BETWEEN_EPOCH, 1000, 1000, 0L, 1, null, null);
            kb.setup(aec);
            time.aec = aec;
        }

        @Override
        public void close() throws Exception {
            try {
                aec.close();
            } finally {
                kb.dispose();
                registry.close();
                res.close();
            }
        }
    }

    /** A registered V2 state: statebench's kind (FlinkBackend.VALUE...) and its descriptor. */
    static final class Reg {
        final int kind;
        final String name;
        final StateDescriptor<?> desc;

        Reg(int kind, String name, StateDescriptor<?> desc) {
            this.kind = kind;
            this.name = name;
            this.desc = desc;
        }
    }

    /** The commands this family serves on a forst-async backend: the event family, the state
     *  operations, and the control commands that address the backend's state (the rest of
     *  the control family, OPEN_BACKEND, CLOSE and the TTL probe, stay the worker's). */
    static boolean serves(int opcode) {
        switch (opcode) {
            case Worker.SET_TIME:
            case Worker.SET_KEY:
            case Worker.REGISTER:
            case Worker.COMPACT:
            case Worker.COUNTS:
            case Worker.SNAPSHOT:
            case Worker.BENCH:
            case Worker.FLUSH:
            case Worker.PROPERTIES:
                return true;
            default:
                return opcode >= Worker.CLEAR && opcode <= Events.LAST;
        }
    }

    /** V1's state commands on the V2 backend (the differential oracle's programs). */
    private final ForStAsyncOps ops = new ForStAsyncOps();
    private FlinkBackend owner;
    private V2 v2;
    private Events.Lane lane;
    private String primary;
    private final List<Reg> regs = new ArrayList<>();
    private ValueState<Object> value;
    private ListState<Object> list;
    private MapState<Object, Object> map;
    private ReducingState<Object> reducing;
    private AggregatingState<Object, Object> aggregating;
    private final List<KeyedStateHandle> checkpoints = new ArrayList<>();
    private final List<long[]> asyncCheckpoints = new ArrayList<>();
    private final ArrayDeque<FlinkBackend.Pending> inFlight = new ArrayDeque<>();
    private ExecutorService checkpointThread;
    private final FlinkBackend.LogicalTime unpinned = new FlinkBackend.LogicalTime();

    @Override
    public void execute(Worker worker, int opcode, Wire.In in, Wire.Out out) throws Exception {
        FlinkBackend b = worker.backend();
        if (opcode == Events.EV_OPEN) {
            open(b, in);
            return;
        }
        if (opcode < Events.FIRST) {
            ensure(b);
            if (lane != null) {
                throw new IllegalStateException("the event lane is open on this backend");
            }
            ops.execute(v2, b.options.stringKeys, regs, opcode, in, out);
            return;
        }
        if (owner != b || v2 == null || lane == null) {
            throw new IllegalStateException("no forst-async lane is open (EV_OPEN first)");
        }
        switch (opcode) {
            case Events.EV_APPLY:
                apply(in);
                return;
            case Events.EV_SAMPLE: {
                long now = in.i64();
                long at = now == Long.MIN_VALUE ? lane.wallNow() : now;
                List<Object> result = new ArrayList<>(census(at));
                result.add(at);
                out.result(result);
                return;
            }
            case Events.EV_STATS:
                out.result(stats());
                return;
            case Events.EV_CHECKPOINT: {
                long id = in.i64();
                String folder = in.str();
                int maxInFlight = in.i32();
                Events.Lane l = lane;  // null before EV_OPEN: checkpoint() says so
                long gc0 = l == null ? -1 : l.busyWindowStart();
                List<Object> result = checkpoint(id, folder, maxInFlight);
                if (l != null) {
                    l.busyWindowEnd(gc0);
                }
                out.result(result);
                return;
            }
            case Events.EV_RESTORE:
                completePending();
                out.result(restore());
                return;
            case Events.EV_WAIT:
                lane.waitUntil(in.i64());
                return;
            default:
                throw new IllegalArgumentException("opcode 0x" + Integer.toHexString(opcode)
                        + " is not served on the forst-async backend");
        }
    }

    /** The lane's V2 backend goes with the shell FlinkBackend (closed with it). */
    private void closeLane() throws Exception {
        V2 old = v2;
        v2 = null;
        ops.reset();
        if (old != null) {
            for (FlinkBackend.Pending p : inFlight) {
                try {
                    p.task.get();
                } catch (Exception ignored) {
                    // closing anyway: the checkpoint is abandoned
                }
            }
            inFlight.clear();
            old.close();
        }
        if (checkpointThread != null) {
            checkpointThread.shutdownNow();
            checkpointThread = null;
        }
    }

    /** The V2 backend of shell `b` (built on first use after OPEN_BACKEND). */
    private void ensure(FlinkBackend b) throws Exception {
        if (owner == b && v2 != null) {
            return;
        }
        closeLane();
        regs.clear();
        checkpoints.clear();
        asyncCheckpoints.clear();
        ops.reset();
        lane = null;
        value = null;
        list = null;
        map = null;
        reducing = null;
        aggregating = null;
        owner = b;
        primary = b.options.primaryDir;
        v2 = new V2(b.options, b.options.dir, primary, Collections.emptyList());
        b.closeWith.add(this::closeLane);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private void open(FlinkBackend b, Wire.In in) throws Exception {
        if (b.options.stringKeys) {
            throw new IllegalArgumentException("the forst-async lane runs long keys");
        }
        ensure(b);
        if (!regs.isEmpty()) {
            throw new IllegalStateException("the event lane's states are already registered");
        }
        Events.Lane l = new Events.Lane();
        l.valueType = in.u8();
        int mask = in.u8();
        StateTtlConfig ttl = v2Ttl(l.readHeader(in, true));
        l.refresh = ttl != null
                && ttl.getUpdateType() == StateTtlConfig.UpdateType.OnReadAndWrite;
        l.originNanos = System.nanoTime();
        if (l.warmLeft <= 0) {
            l.measureGc();
        }
        v2.time.now = l.startMs;
        lane = l;
        TypeSerializer vs;
        switch (l.valueType) {
            case Events.V_LONG:
                vs = LongSerializer.INSTANCE;
                break;
            case Events.V_STRING:
                vs = StringSerializer.INSTANCE;
                break;
            case Events.V_BYTES:
                vs = BytePrimitiveArraySerializer.INSTANCE;
                break;
            default:
                throw new IllegalArgumentException("unknown event value type " + l.valueType);
        }
        for (int sid = 0; sid < Events.NAMES.length; sid++) {
            if ((mask & (1 << sid)) == 0) {
                continue;
            }
            String name = Events.NAMES[sid];
            StateDescriptor desc;
            switch (sid) {
                case 0:
                    desc = new ValueStateDescriptor<>(name, vs);
                    break;
                case 1:
                    desc = new ListStateDescriptor<>(name, vs);
                    break;
                case 2:
                    desc = new MapStateDescriptor<>(name, IntSerializer.INSTANCE, vs);
                    break;
                case 3:
                    desc = new ReducingStateDescriptor<>(name, (ReduceFunction) Events::max, vs);
                    break;
                default:
                    desc = new AggregatingStateDescriptor<>(name, new Events.SumAggregate(),
                            LongSerializer.INSTANCE);
                    break;
            }
            if (ttl != null) {
                desc.enableTimeToLive(ttl);
            }
            regs.add(new Reg(sid + 1, name, desc));
        }
        bind(v2);
    }

    /**
     * The TTL State V2 accepts: Flink 2.3's V2 TtlStateFactory refuses every configuration
     * whose cleanup is not the compaction filter ("Only ROCKSDB_COMPACTION_FILTER strategy is
     * supported in state V2", FLINK-35268), disableCleanupInBackground included. So the
     * strategy `none` (background cleanup disabled) keeps Flink's default background cleanup,
     * the compaction filter with its default query interval: the one TTL V2 runs, and on ForSt's
     * V2 backend a filter that is never configured (FLINK-40354), so nothing is cleaned either
     * way. Update type and visibility are kept (V2 refuses OnReadAndWrite itself).
     */
    static StateTtlConfig v2Ttl(StateTtlConfig ttl) {
        if (ttl == null || ttl.getCleanupStrategies().inRocksdbCompactFilter()) {
            return ttl;
        }
        return StateTtlConfig.newBuilder(ttl.getTimeToLive())
                .setUpdateType(ttl.getUpdateType())
                .setStateVisibility(ttl.getStateVisibility())
                .build();
    }

    /** Creates the registered states on `target` (the lane's own, or a restored one). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private void bind(V2 target) throws Exception {
        for (Reg r : regs) {
            State s = target.kb.getOrCreateKeyedState(VoidNamespace.INSTANCE,
                    VoidNamespaceSerializer.INSTANCE, (StateDescriptor) r.desc);
            if (target != v2) {
                continue;
            }
            switch (r.kind) {
                case FlinkBackend.VALUE:
                    value = (ValueState<Object>) s;
                    break;
                case FlinkBackend.LIST:
                    list = (ListState<Object>) s;
                    break;
                case FlinkBackend.MAP:
                    map = (MapState<Object, Object>) s;
                    break;
                case FlinkBackend.REDUCING:
                    reducing = (ReducingState<Object>) s;
                    break;
                default:
                    aggregating = (AggregatingState<Object, Object>) s;
                    break;
            }
        }
    }

    /**
     * Whether a V2 iterator stands for no state. Flink 2.3's TTL list wrapper
     * (TtlListState.AsyncIteratorWrapper) of an absent list wraps a null iterator, and its
     * isEmpty() and onNext() throw a NullPointerException ("this.originalIterator" is null):
     * a list read of a key without a list fails on State V2 with TTL. The lane reads the
     * wrapper's field instead, so an absent list reads as empty, as on V1.
     */
    static boolean absent(StateIterator<?> it) throws IllegalAccessException {
        if (it == null) {
            return true;
        }
        Field f = WRAPPED.computeIfAbsent(it.getClass(), c -> {
            try {
                Field inner = c.getDeclaredField("originalIterator");
                inner.setAccessible(true);
                return inner;
            } catch (NoSuchFieldException none) {
                return NO_FIELD;
            }
        });
        return f != NO_FIELD && f.get(it) == null;
    }

    private static final Map<Class<?>, Field> WRAPPED = new java.util.concurrent.ConcurrentHashMap<>();
    private static final Field NO_FIELD;

    static {
        try {
            NO_FIELD = Stamp.class.getDeclaredField("t");
        } catch (NoSuchFieldException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static <T> void walk(StateIterator<T> it) throws Exception {
        if (!absent(it) && !it.isEmpty()) {
            org.apache.flink.util.function.ThrowingConsumer<T, Exception> skip = ignored -> {
                // walk every element, as the Python loop does
            };
            it.onNext(skip);
        }
    }

    /**
     * EV_APPLY's columns (Events' layout), each record under its own record context; the batch
     * ends with the controller's drain, so every record of it finished before the next command.
     * Busy time: the issuing loop plus the drain, the drain shared pro rata by the batch's
     * post-warm-up records; per-record latency is the time to issue the record's requests.
     */
    private void apply(Wire.In in) throws Exception {
        Events.Lane l = lane;
        ByteBuffer buf = in.buf;
        int n = buf.getInt();
        int base = buf.position();
        boolean longs = l.valueType == Events.V_LONG;
        int tsAt = base + 8 * n;
        int opsAt = tsAt + 8 * n;
        int valsAt = opsAt + n;
        int mksAt = valsAt + (longs ? 8 : 4) * n;
        int end = mksAt + 4 * n;
        if (end > buf.limit()) {
            throw new IllegalArgumentException("EV_APPLY of " + n + " events is truncated");
        }
        buf.position(end);
        StateExecutionController<Object> aec = v2.aec;
        RecordTime time = v2.time;
        Events.LongLongMap shadow = l.shadow;
        long ttl = l.ttlMs;
        boolean verify = l.verify;
        boolean refresh = l.refresh;
        long lateMs = (long) l.speedup;
        long[] bad = new long[1];
        long post = 0;
        long postNanos = 0;
        long during = 0;
        long duringNanos = 0;
        long warmLeft = l.warmLeft;
        boolean async = !inFlight.isEmpty();
        long gc0 = l.busyWindowStart();
        long stamp = System.nanoTime();
        for (int i = 0; i < n; i++) {
            boolean inAsync = false;
            if (async) {
                async = completeDone();
                inAsync = async;
            }
            final long k = buf.getLong(base + 8 * i);
            final long t;
            if (l.paced) {
                long due = buf.getLong(tsAt + 8 * i);
                l.waitUntil(due);
                long lag = l.wallNow() - due;
                l.lagBuckets[Events.bucket(lag * 1_000_000L)]++;
                if (lag > lateMs) {
                    l.late++;
                }
                l.released++;
                stamp = System.nanoTime();
            }
            t = l.wall ? l.wallNow() : buf.getLong(tsAt + 8 * i);
            time.now = t;
            RecordContext<Object> ctx = aec.buildContext(new Stamp(t), (Object) k);
            ctx.retain();
            aec.setCurrentContext(ctx);
            int op = buf.get(opsAt + i);
            switch (op) {
                case Events.VALUE_GET:
                    value.asyncValue().thenAccept(r -> check(shadow, bad, k, t, r, verify,
                            refresh, ttl));
                    break;
                case Events.VALUE_UPDATE: {
                    Object v = val(buf, l, longs, valsAt, i);
                    if (verify) {
                        value.asyncUpdate(v).thenAccept(x -> shadow.put(k, t));
                    } else {
                        value.asyncUpdate(v);
                    }
                    break;
                }
                case Events.LIST_ADD:
                    list.asyncAdd(val(buf, l, longs, valsAt, i));
                    break;
                case Events.MAP_PUT:
                    map.asyncPut(buf.getInt(mksAt + 4 * i), val(buf, l, longs, valsAt, i));
                    break;
                case Events.VALUE_RMW: {
                    Object v = val(buf, l, longs, valsAt, i);
                    value.asyncValue().thenCompose(r -> {
                        check(shadow, bad, k, t, r, verify, refresh, ttl);
                        return value.asyncUpdate(v);
                    }).thenAccept(x -> {
                        if (verify) {
                            shadow.put(k, t);
                        }
                    });
                    break;
                }
                case Events.MAP_GET:
                    map.asyncGet(buf.getInt(mksAt + 4 * i));
                    break;
                case Events.REDUCING_ADD:
                    reducing.asyncAdd(val(buf, l, longs, valsAt, i));
                    break;
                case Events.LIST_GET:
                    list.asyncGet().thenAccept(ForStAsyncLane::walk);
                    break;
                case Events.MAP_ITERATE:
                    map.asyncEntries().thenAccept(ForStAsyncLane::walk);
                    break;
                case Events.VALUE_CLEAR:
                    value.asyncClear().thenAccept(x -> {
                        if (verify) {
                            shadow.put(k, Events.NEVER_WRITTEN);
                        }
                    });
                    break;
                case Events.MAP_REMOVE:
                    map.asyncRemove(buf.getInt(mksAt + 4 * i));
                    break;
                case Events.AGGREGATING_ADD:
                    aggregating.asyncAdd(val(buf, l, longs, valsAt, i));
                    break;
                default:
                    throw new IllegalArgumentException("unknown op code " + op);
            }
            ctx.release();
            long now = System.nanoTime();
            long took = now - stamp;
            stamp = now;
            if (warmLeft > 0) {
                if (--warmLeft == 0) {
                    l.measureGc();
                }
            } else {
                post++;
                postNanos += took;
                if (inAsync) {
                    during++;
                    duringNanos += took;
                }
                if (l.latency) {
                    l.buckets[Events.bucket(took)]++;
                }
            }
        }
        long drainStart = System.nanoTime();
        aec.drainInflightRecords(0);
        long drain = System.nanoTime() - drainStart;
        if (n > 0 && post > 0) {
            postNanos += drain * post / n;
        }
        l.busyWindowEnd(gc0);
        l.warmLeft = warmLeft;
        l.records += n;
        l.postRecords += post;
        l.postNanos += postNanos;
        l.duringRecords += during;
        l.duringNanos += duringNanos;
        l.expiredReturned += bad[0];
    }

    /** A value read's TTL check against the shadow of the key's last write (Events'). */
    private static void check(Events.LongLongMap shadow, long[] bad, long k, long t, Object r,
                              boolean verify, boolean refresh, long ttl) {
        if (verify && r != null) {
            if (shadow.get(k, Events.NEVER_WRITTEN) + ttl <= t) {
                bad[0]++;
            } else if (refresh) {
                shadow.put(k, t);
            }
        }
    }

    private static Object val(ByteBuffer buf, Events.Lane l, boolean longs, int valsAt, int i) {
        if (longs) {
            return buf.getLong(valsAt + 8 * i);
        }
        return l.payload(buf.getInt(valsAt + 4 * i));
    }

    private List<Object> stats() throws Exception {
        Events.Lane l = lane;
        long[] gc = Events.gcTotals();
        completePending();
        List<Object> result = new ArrayList<>();
        result.add(l.records);
        result.add(l.postRecords);
        result.add(l.postNanos);
        result.add(l.expiredReturned);
        result.add(nonzero(l.buckets));
        result.add(l.released);
        result.add(l.late);
        result.add(nonzero(l.lagBuckets));
        List<Object> flat = new ArrayList<>();
        for (long[] c : asyncCheckpoints) {
            for (long v : c) {
                flat.add(v);
            }
        }
        result.add(flat);
        result.add(l.duringRecords);
        result.add(l.duringNanos);
        boolean measured = l.gcMs0 >= 0;
        result.add(measured ? gc[0] - l.gcMs0 : 0L);
        result.add(measured ? gc[1] - l.gcCount0 : 0L);
        result.add(measured ? l.busyGcMs : 0L);
        return result;
    }

    private static List<Object> nonzero(long[] buckets) {
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < buckets.length; i++) {
            if (buckets[i] != 0) {
                out.add((long) i);
                out.add(buckets[i]);
            }
        }
        return out;
    }

    // ------------------------------------------------------------------ samples

    private Field infoField(Object info, String name) throws NoSuchFieldException {
        Field f = info.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f;
    }

    /**
     * Census.take's layout over the V2 backend's column families: every stored unit live or
     * expired at `now` by its TTL timestamp (V2's layouts: a value's or list's bytes as V1's, a
     * map entry a null flag then the value), read-only; physical bytes = SST files + memtables
     * of the states' column families; the RocksDB statistics; bytes on disk per folder.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private List<Object> census(long now) throws Exception {
        Census c = Census.create(lane.ttlMs, now);
        Map<String, Object> infos = ForStAccess.infos(v2.kb);
        long physical = 0;
        DataInputDeserializer in = new DataInputDeserializer();
        ListDelimitedSerializer lists = new ListDelimitedSerializer();
        for (Reg r : regs) {
            Object info = infos.get(r.name);
            if (info == null) {
                continue;
            }
            ColumnFamilyHandle h = (ColumnFamilyHandle) infoField(info, "columnFamilyHandle")
                    .get(info);
            TypeSerializer serializer = ((RegisteredKeyValueStateBackendMetaInfo)
                    infoField(info, "metaInfo").get(info)).getStateSerializer();
            byte[] lastKey = null;
            try (ReadOptions options = new ReadOptions();
                 RocksIterator it = ForStAccess.db(v2.kb).newIterator(h, options)) {
                for (it.seekToFirst(); it.isValid(); it.next()) {
                    byte[] raw = it.key();
                    byte[] bytes = it.value();
                    if (r.kind == FlinkBackend.MAP) {
                        byte[] prefix = Arrays.copyOf(raw, raw.length - 4);
                        if (lastKey == null || !Arrays.equals(prefix, lastKey)) {
                            c.key();
                            lastKey = prefix;
                        }
                        in.setBuffer(bytes);
                        Object unit = in.readBoolean() ? null : serializer.deserialize(in);
                        c.unit(unit, true);
                    } else if (r.kind == FlinkBackend.LIST) {
                        c.key();
                        for (Object item : lists.deserializeList(bytes, serializer)) {
                            c.unit(item, false);
                        }
                    } else {
                        c.key();
                        in.setBuffer(bytes);
                        c.unit(serializer.deserialize(in), false);
                    }
                }
            }
            physical += ForStAccess.property(v2.kb, r.name, "rocksdb.total-sst-files-size")
                    + ForStAccess.property(v2.kb, r.name, "rocksdb.cur-size-all-mem-tables");
        }
        List<Object> rocksStats = new ArrayList<>();
        for (double v : ForStAccess.stats(v2.kb)) {
            rocksStats.add(v);
        }
        List<Object> storage = new ArrayList<>();
        storage.add(ForStAccess.folderBytes(owner.options.dir));
        storage.add(ForStAccess.folderBytes(primary));
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

    // ------------------------------------------------------------------ checkpoints

    /** FlinkBackend.streamFactory's ForSt location: the kind ForSt reuses its files with. */
    private static FsCheckpointStorageLocation location(String folder) {
        File dir = new File(folder).getAbsoluteFile();
        File shared = new File(dir, "shared");
        File owned = new File(dir, "taskowned");
        if (!shared.isDirectory() && !shared.mkdirs() || !owned.isDirectory() && !owned.mkdirs()) {
            throw new IllegalArgumentException("cannot create snapshot folder " + dir);
        }
        return new FsCheckpointStorageLocation(FileSystem.getLocalFileSystem(),
                new Path(dir.toURI()), new Path(shared.toURI()), new Path(owned.toURI()),
                CheckpointStorageLocationReference.getDefault(), 0, 4096);
    }

    /** FlinkBackend.checkpointAsync on the V2 backend: every record drained (each EV_APPLY
     *  ends drained, as AbstractAsyncStateStreamOperator drains before a snapshot), V2's
     *  snapshot's synchronous phase here, its asynchronous phase on the checkpoint thread. */
    private List<Object> checkpoint(long id, String folder, int maxInFlight) throws Exception {
        if (maxInFlight < 1) {
            throw new IllegalArgumentException("max checkpoints in flight must be >= 1, got "
                    + maxInFlight);
        }
        long waitStart = System.nanoTime();
        while (inFlight.size() >= maxInFlight) {
            completeOldest();
        }
        long wait = System.nanoTime() - waitStart;
        FsCheckpointStorageLocation factory = location(folder);
        long start = System.nanoTime();
        v2.aec.drainInflightRecords(0);
        RunnableFuture<SnapshotResult<KeyedStateHandle>> future = v2.kb.snapshot(id, id, factory,
                CheckpointOptions.forCheckpointWithDefaultLocation());
        long sync = System.nanoTime() - start;
        FlinkBackend.Pending p = new FlinkBackend.Pending(id, sync, wait, v2.time.now, future);
        if (checkpointThread == null) {
            checkpointThread = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "statebench-forst-async-checkpoint");
                t.setDaemon(true);
                return t;
            });
        }
        p.task = checkpointThread.submit(() -> p.run(unpinned));
        inFlight.addLast(p);
        List<Object> out = new ArrayList<>();
        out.add(sync);
        out.add(wait);
        return out;
    }

    private void completePending() throws Exception {
        while (!inFlight.isEmpty()) {
            completeOldest();
        }
    }

    private boolean completeDone() throws Exception {
        while (!inFlight.isEmpty() && inFlight.peekFirst().done) {
            completeOldest();
        }
        return !inFlight.isEmpty();
    }

    private void completeOldest() throws Exception {
        FlinkBackend.Pending p = inFlight.peekFirst();
        p.task.get();
        inFlight.pollFirst();
        if (p.failure != null) {
            throw new IllegalStateException("the asynchronous phase of V2 checkpoint " + p.id
                    + " failed", p.failure);
        }
        v2.kb.notifyCheckpointComplete(p.id);
        KeyedStateHandle handle = p.result.getJobManagerOwnedSnapshot();
        if (handle != null) {
            checkpoints.add(handle);
        }
        long size = handle == null ? 0L : handle.getStateSize();
        long checkpointed = handle instanceof CompositeStateHandle
                ? ((CompositeStateHandle) handle).getCheckpointedSize() : size;
        asyncCheckpoints.add(new long[] {p.id, size, checkpointed, p.syncNs, p.asyncNs,
                p.asyncCpuNs, p.waitNs, inPlace(handle)});
    }

    /** FlinkBackend.inPlace: new shared files referred to on the primary folder. */
    private long inPlace(KeyedStateHandle handle) {
        if (primary == null || primary.contains("://")
                || !(handle instanceof IncrementalRemoteKeyedStateHandle)) {
            return 0L;
        }
        String root = new File(primary).getAbsoluteFile().toURI().getPath();
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

    /** Events.restore on V2: a fresh V2 backend (fresh folders) from the last checkpoint's
     *  handle, its states created again, then disposed. Returns ns. */
    private long restore() throws Exception {
        if (checkpoints.isEmpty()) {
            throw new IllegalStateException("no checkpoint to restore from (EV_CHECKPOINT first)");
        }
        KeyedStateHandle last = checkpoints.get(checkpoints.size() - 1);
        Events.resolvePlaceholders(checkpoints, last);
        String tag = "restore-" + System.nanoTime();
        String dir = new File(owner.options.dir, tag).getPath();
        String restoredPrimary = primary == null ? null : primary + "/" + tag;
        long start = System.nanoTime();
        try (V2 restored = new V2(owner.options, dir, restoredPrimary,
                Collections.singletonList(last))) {
            bind(restored);
            return System.nanoTime() - start;
        }
    }

}
