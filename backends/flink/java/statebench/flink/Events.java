package statebench.flink;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.api.java.typeutils.runtime.NullableSerializer;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.PlaceholderStreamStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The workload-event command family (opcodes 0x40-0x4F): statebench's keyed operator, in Java.
 *
 * <p>EV_OPEN registers the operator's states (fixed names value, list, map, reducing,
 * aggregating) with the scenario's TTL; EV_APPLY applies a batch of events in one loop, exactly
 * as workloads/run/hotloop.py does per op (read-modify-write = value() then update(), list get
 * and map iterate walk every element), with the TTL clock at each record's timestamp (or a
 * scaled wall clock, as statebench's operator does for wall-clock-driven scenarios). It measures
 * what the Python operator measures: busy nanoseconds and a per-record latency histogram after
 * the warm-up (the same log-linear buckets as workloads/run/metrics.py), and expired values
 * returned by value reads (a shadow of each key's last write, as the Python loop keeps).
 * EV_SAMPLE scans what Flink physically holds without touching TTL (see {@link Census}).
 * EV_CHECKPOINT is a checkpoint barrier as a Flink task meets it: the synchronous phase on this
 * (the task's) thread, the asynchronous one on the backend's checkpoint thread while the record
 * loop goes on ({@link FlinkBackend#checkpointAsync}); the loop counts its post-warm-up records
 * and nanoseconds while one runs, and completes it (notifyCheckpointComplete) on the task thread
 * at the first record after it finished. EV_STATS waits for the last one (the end of input).
 * Layouts: backends/flink/__init__.py.
 */
final class Events implements CommandFamily {
    static final int EV_OPEN = 0x40;
    static final int EV_APPLY = 0x41;
    static final int EV_SAMPLE = 0x42;
    static final int EV_STATS = 0x43;
    static final int EV_RESTORE = 0x44;
    static final int EV_WAIT = 0x45;
    static final int EV_CHECKPOINT = 0x46;
    // clock modes of EV_OPEN
    static final int CLOCK_RECORD = 0;
    static final int CLOCK_WALL = 1;
    static final int CLOCK_PACED = 2;
    /** Longest single sleep while a paced record is not due yet (workloads/run/pacing.py). */
    static final long MAX_SLEEP_NANOS = 50_000_000L;
    static final int FIRST = 0x40;
    static final int LAST = 0x4F;

    // workloads/ops.py codes (never renumbered there)
    static final int VALUE_GET = 0;
    static final int VALUE_UPDATE = 1;
    static final int VALUE_CLEAR = 2;
    static final int VALUE_RMW = 3;
    static final int LIST_ADD = 4;
    static final int LIST_GET = 5;
    static final int MAP_PUT = 6;
    static final int MAP_GET = 7;
    static final int MAP_ITERATE = 8;
    static final int MAP_REMOVE = 9;
    static final int REDUCING_ADD = 10;
    static final int AGGREGATING_ADD = 11;

    // value types of EV_OPEN
    static final int V_LONG = 1;
    static final int V_STRING = 2;
    static final int V_BYTES = 7;

    static final String[] NAMES = {"value", "list", "map", "reducing", "aggregating"};
    /** workloads/payloads.py's pattern: payloads are its prefixes, repeated to the size. */
    static final byte[] PATTERN =
            "statebench-payload:0123456789abcdefghijklmnopqrstuvwxyz;".getBytes(StandardCharsets.US_ASCII);
    static final long NEVER_WRITTEN = -(1L << 62);
    // workloads/run/metrics.py: 64 buckets per power of two, exact below 64 ns
    static final int SUB_BUCKET_BITS = 6;
    static final int SUB_BUCKETS = 1 << SUB_BUCKET_BITS;
    static final int NUM_BUCKETS = SUB_BUCKETS * (64 - SUB_BUCKET_BITS + 1);

    /** One task's operator state: the registered states, the clock mode and the measurements. */
    static final class Lane {
        int valueType;
        long ttlMs;
        boolean refresh;
        boolean verify;
        boolean wall;
        boolean paced;
        boolean started;
        double speedup;
        long startMs;
        long originNanos;
        boolean latency;
        long warmLeft;
        ValueState<Object> value;
        ListState<Object> list;
        MapState<Object, Object> map;
        ReducingState<Object> reducing;
        AggregatingState<Object, Object> aggregating;
        final Map<Integer, Object> payloads = new HashMap<>();
        final LongLongMap shadow = new LongLongMap();
        final long[] buckets = new long[NUM_BUCKETS];
        long records;
        long postRecords;
        long postNanos;
        long expiredReturned;
        long lastT = Long.MIN_VALUE;
        // paced: schedule lag (clock ms, stored as ms * 1e6 in the latency buckets), late records
        final long[] lagBuckets = new long[NUM_BUCKETS];

        /**
         * The header every lane's open starts with, read in one place (the key-value lanes, the
         * ForSt async lane and the operator lane): i64 ttl ms, the TTL fields
         * (FlinkBackend.readTtl), u8 clock, f64 speedup, i64 start ms, i64 warm-up records, u8
         * verify (only where {@code withVerify}: the operator lane has none), u8 latency
         * histogram. Returns the TTL configuration (null without a TTL).
         */
        StateTtlConfig readHeader(Wire.In in, boolean withVerify) {
            ttlMs = in.i64();
            StateTtlConfig ttl = FlinkBackend.readTtl(in, ttlMs);
            int clock = in.u8();
            wall = clock != CLOCK_RECORD;
            paced = clock == CLOCK_PACED;
            speedup = Double.longBitsToDouble(in.i64());
            startMs = in.i64();
            warmLeft = in.i64();
            verify = withVerify && in.u8() == 1 && ttlMs > 0;
            latency = in.u8() == 1;
            return ttl;
        }
        long released;
        long late;
        // post-warm-up records (and their loop ns) while a checkpoint's async phase ran
        long duringRecords;
        long duringNanos;
        // JVM garbage collection when the measured part (after the warm-up) began; -1: not yet
        long gcMs0 = -1;
        long gcCount0;
        /** Registers the lane's states on a restored backend (EV_RESTORE); null: the event
         *  lane's own, in the void namespace. An operator lane registers its kind's. */
        Registrar registrar;

        // GC ms of the measured part that fell inside the task's busy windows (its loops over a
        // batch, a checkpoint's synchronous phase and barrier wait): the caller charges the
        // rest to busy time too, as a Flink task, never idle, is stopped by every pause
        long busyGcMs;

        /** The measured part begins: the JVM's GC totals so far are not its own. */
        void measureGc() {
            long[] gc = gcTotals();
            gcMs0 = gc[0];
            gcCount0 = gc[1];
        }

        /** A busy window begins: the GC ms so far, or -1 while the warm-up is not over. */
        long busyWindowStart() {
            return gcMs0 >= 0 ? gcTotals()[0] : -1;
        }

        /** A busy window that began at {@code start} ends: its GC ms after the warm-up. */
        void busyWindowEnd(long start) {
            if (gcMs0 >= 0) {
                busyGcMs += gcTotals()[0] - (start >= 0 ? start : gcMs0);
            }
        }

        long wallNow() {
            return startMs + (long) ((System.nanoTime() - originNanos) / 1e6 * speedup);
        }

        /** Paced: the task starts now, so clock time is the run's start now (once). */
        void start() {
            if (!started) {
                originNanos = System.nanoTime();
                started = true;
            }
        }

        /** Paced: sleep until the clock reaches `ts` (returns at once when it already has). */
        void waitUntil(long ts) throws InterruptedException {
            start();
            while (true) {
                long ahead = ts - wallNow();
                if (ahead <= 0) {
                    return;
                }
                long nanos = Math.min((long) (ahead / speedup * 1e6), MAX_SLEEP_NANOS);
                Thread.sleep(nanos / 1_000_000L, (int) (nanos % 1_000_000L));
            }
        }

        Object payload(int size) {
            Object cached = payloads.get(size);
            if (cached == null) {
                byte[] data = new byte[size];
                for (int i = 0; i < size; i++) {
                    data[i] = PATTERN[i % PATTERN.length];
                }
                cached = valueType == V_STRING ? new String(data, StandardCharsets.US_ASCII) : data;
                payloads.put(size, cached);
            }
            return cached;
        }
    }

    private Lane lane;

    /** Registers a lane's states on a backend restored from its checkpoint. */
    interface Registrar {
        void register(FlinkBackend restored) throws Exception;
    }

    /** [collection ms, collections] summed over the JVM's garbage collectors. */
    static long[] gcTotals() {
        long ms = 0;
        long count = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            ms += Math.max(0L, gc.getCollectionTime());
            count += Math.max(0L, gc.getCollectionCount());
        }
        return new long[] {ms, count};
    }

    static void install(Worker worker) {
        Events events = new Events();
        worker.register(FIRST, LAST, events);
        Operators.install(worker, events);
    }

    /** The lane EV_CHECKPOINT, EV_WAIT and EV_STATS measure: one an operator family opened
     *  (statebench.flink.Operators' OP_OPEN runs its own record loop on it). */
    void use(Lane l) {
        lane = l;
    }

    @Override
    public void execute(Worker worker, int opcode, Wire.In in, Wire.Out out) throws Exception {
        FlinkBackend b = worker.backend();
        switch (opcode) {
            case EV_OPEN:
                lane = open(b, in);
                return;
            case EV_APPLY:
                apply(b, lane(), in);
                return;
            case EV_SAMPLE: {
                long now = in.i64();
                Lane l = lane();
                long at = now == Long.MIN_VALUE ? l.wallNow() : now;
                List<Object> result = new ArrayList<>(Census.take(b, l.ttlMs, at));
                result.add(at);
                out.result(result);
                return;
            }
            case EV_STATS: {
                Lane l = lane();
                long[] gc = gcTotals();
                b.completePending(); // the end of input: the last checkpoint completes (not busy)
                List<Object> result = new ArrayList<>();
                result.add(l.records);
                result.add(l.postRecords);
                result.add(l.postNanos);
                result.add(l.expiredReturned);
                result.add(nonzero(l.buckets));
                result.add(l.released);
                result.add(l.late);
                result.add(nonzero(l.lagBuckets));
                List<Object> checkpoints = new ArrayList<>();
                for (long[] c : b.asyncCheckpoints) {
                    for (long v : c) {
                        checkpoints.add(v);
                    }
                }
                result.add(checkpoints);
                result.add(l.duringRecords);
                result.add(l.duringNanos);
                boolean measured = l.gcMs0 >= 0;
                result.add(measured ? gc[0] - l.gcMs0 : 0L);
                result.add(measured ? gc[1] - l.gcCount0 : 0L);
                result.add(measured ? l.busyGcMs : 0L);
                out.result(result);
                return;
            }
            case EV_CHECKPOINT: {
                long id = in.i64();
                String folder = in.str();
                int maxInFlight = in.i32();
                Lane l = lane();
                long gc0 = l.busyWindowStart();
                List<Object> result = b.checkpointAsync(id, folder, maxInFlight);
                l.busyWindowEnd(gc0);
                out.result(result);
                return;
            }
            case EV_RESTORE:
                b.completePending();
                out.result(restore(b, lane == null ? null : lane.registrar));
                return;
            case EV_WAIT:
                lane().waitUntil(in.i64());
                return;
            default:
                throw new IllegalArgumentException("unknown event opcode 0x" + Integer.toHexString(opcode));
        }
    }

    private Lane lane() {
        if (lane == null) {
            throw new IllegalStateException("no event lane is open (EV_OPEN first)");
        }
        return lane;
    }

    /**
     * A restarted task, timed: a fresh backend restored from the last checkpoint's handle with
     * the lane's states registered again (as a restarted job does), then disposed. Returns ns.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static long restore(FlinkBackend b, Registrar registrar) throws Exception {
        if (b.checkpoints.isEmpty()) {
            throw new IllegalStateException("no checkpoint to restore from (SNAPSHOT first)");
        }
        KeyedStateHandle last = b.checkpoints.get(b.checkpoints.size() - 1);
        resolvePlaceholders(b.checkpoints, last);
        FlinkBackend.Options o = new FlinkBackend.Options();
        o.rocksdb = b.options.rocksdb;
        o.forst = b.options.forst;
        if (b.options.primaryDir != null) {  // a restarted task's DB files: a fresh folder
            o.primaryDir = b.options.primaryDir + "/restore-" + System.nanoTime();
        }
        o.stringKeys = b.options.stringKeys;
        o.maxParallelism = b.options.maxParallelism;
        o.keyGroupStart = b.options.keyGroupStart;
        o.keyGroupEnd = b.options.keyGroupEnd;
        o.dir = new java.io.File(b.options.dir, "restore-" + System.nanoTime()).getPath();
        o.queryTimeAfterNumEntries = b.options.queryTimeAfterNumEntries;
        o.periodicCompactionMs = b.options.periodicCompactionMs;
        o.rocksConf = b.options.rocksConf;
        o.incrementalCheckpoints = b.options.incrementalCheckpoints;
        o.restore = java.util.Collections.singletonList(last);
        long start = System.nanoTime();
        FlinkBackend restored = new FlinkBackend(o);
        try {
            if (registrar != null) {
                registrar.register(restored);
                return System.nanoTime() - start;
            }
            for (FlinkBackend.Registered r : b.states.values()) {
                restored.backend.getPartitionedState(VoidNamespace.INSTANCE,
                        VoidNamespaceSerializer.INSTANCE, (StateDescriptor) r.descriptor);
            }
            return System.nanoTime() - start;
        } finally {
            restored.close();
        }
    }

    /**
     * What Flink's checkpoint coordinator does for an incremental RocksDB checkpoint: its shared
     * SST files uploaded by an earlier checkpoint are placeholders, replaced here by the earlier
     * real handle of the same file (RocksDB file names are unique within a DB).
     */
    static void resolvePlaceholders(List<KeyedStateHandle> all, KeyedStateHandle last) {
        if (!(last instanceof IncrementalRemoteKeyedStateHandle)) {
            return;
        }
        Map<String, StreamStateHandle> real = new HashMap<>();
        for (KeyedStateHandle h : all) {
            if (h instanceof IncrementalRemoteKeyedStateHandle) {
                for (IncrementalKeyedStateHandle.HandleAndLocalPath p
                        : ((IncrementalRemoteKeyedStateHandle) h).getSharedState()) {
                    if (!(p.getHandle() instanceof PlaceholderStreamStateHandle)) {
                        real.put(p.getLocalPath(), p.getHandle());
                    }
                }
            }
        }
        for (IncrementalKeyedStateHandle.HandleAndLocalPath p
                : ((IncrementalRemoteKeyedStateHandle) last).getSharedState()) {
            if (p.getHandle() instanceof PlaceholderStreamStateHandle) {
                StreamStateHandle handle = real.get(p.getLocalPath());
                if (handle == null) {
                    throw new IllegalStateException("shared file " + p.getLocalPath()
                            + " of the last checkpoint was uploaded by no earlier checkpoint");
                }
                p.replaceHandle(handle);
            }
        }
    }

    /** A histogram's non-empty buckets as a flat list: index, count, index, count, ... */
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

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Lane open(FlinkBackend b, Wire.In in) throws Exception {
        Lane l = new Lane();
        l.valueType = in.u8();
        int mask = in.u8();
        StateTtlConfig ttl = l.readHeader(in, true);
        l.refresh = ttl != null
                && ttl.getUpdateType() == StateTtlConfig.UpdateType.OnReadAndWrite;
        l.originNanos = System.nanoTime();
        if (l.warmLeft <= 0) {
            l.measureGc();
        }
        b.time.now = l.startMs;
        TypeSerializer vs;
        switch (l.valueType) {
            case V_LONG:
                vs = LongSerializer.INSTANCE;
                break;
            case V_STRING:
                vs = StringSerializer.INSTANCE;
                break;
            case V_BYTES:
                vs = BytePrimitiveArraySerializer.INSTANCE;
                break;
            default:
                throw new IllegalArgumentException("unknown event value type " + l.valueType);
        }
        for (int sid = 0; sid < NAMES.length; sid++) {
            if ((mask & (1 << sid)) == 0) {
                continue;
            }
            String name = NAMES[sid];
            StateDescriptor<?, ?> desc;
            switch (sid) {
                case 0:
                    desc = new ValueStateDescriptor<>(name, vs);
                    break;
                case 1:
                    desc = new ListStateDescriptor<>(name, vs);
                    break;
                case 2:
                    desc = new MapStateDescriptor<>(name, IntSerializer.INSTANCE,
                            NullableSerializer.wrapIfNullIsNotSupported(vs, false));
                    break;
                case 3:
                    desc = new ReducingStateDescriptor<>(name, (ReduceFunction) Events::max, vs);
                    break;
                default:
                    desc = new AggregatingStateDescriptor<>(name, new SumAggregate(),
                            LongSerializer.INSTANCE);
                    break;
            }
            if (ttl != null) {
                desc.enableTimeToLive(ttl);
            }
            State state = b.backend.getPartitionedState(VoidNamespace.INSTANCE,
                    VoidNamespaceSerializer.INSTANCE, (StateDescriptor) desc);
            if (b.states.containsKey(100 + sid)) {
                throw new IllegalStateException("the event lane's states are already registered");
            }
            b.states.put(100 + sid, new FlinkBackend.Registered(sid + 1, name, desc, state));
            switch (sid) {
                case 0:
                    l.value = (ValueState<Object>) state;
                    break;
                case 1:
                    l.list = (ListState<Object>) state;
                    break;
                case 2:
                    l.map = (MapState<Object, Object>) state;
                    break;
                case 3:
                    l.reducing = (ReducingState<Object>) state;
                    break;
                default:
                    l.aggregating = (AggregatingState<Object, Object>) state;
                    break;
            }
        }
        return l;
    }

    /** statebench's reducing function: max (longs numerically, str/bytes lexicographically). */
    static Object max(Object a, Object b) {
        if (a instanceof Long) {
            return ((Long) a) >= ((Long) b) ? a : b;
        }
        if (a instanceof String) {
            return ((String) a).compareTo((String) b) >= 0 ? a : b;
        }
        return Arrays.compareUnsigned((byte[]) a, (byte[]) b) >= 0 ? a : b;
    }

    /** statebench's SumAggregate: the sum of longs, or of payload lengths. */
    static final class SumAggregate implements AggregateFunction<Object, Long, Long> {
        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Object value, Long acc) {
            if (value instanceof Long) {
                return acc + (Long) value;
            }
            if (value instanceof String) {
                return acc + ((String) value).length();
            }
            return acc + ((byte[]) value).length;
        }

        @Override
        public Long getResult(Long acc) {
            return acc;
        }

        @Override
        public Long merge(Long a, Long b) {
            return a + b;
        }
    }

    /**
     * EV_APPLY i32 n, then columns of n each (big-endian): key i64, ts i64, op i8, value i64 (long
     * values) or value_size i32 (string/bytes payloads), map_key i32.
     */
    private static void apply(FlinkBackend fb, Lane l, Wire.In in) throws Exception {
        ByteBuffer buf = in.buf;
        int n = buf.getInt();
        int base = buf.position();
        boolean longs = l.valueType == V_LONG;
        int keysAt = base;
        int tsAt = keysAt + 8 * n;
        int opsAt = tsAt + 8 * n;
        int valsAt = opsAt + n;
        int mksAt = valsAt + (longs ? 8 : 4) * n;
        int end = mksAt + 4 * n;
        if (end > buf.limit()) {
            throw new IllegalArgumentException("EV_APPLY of " + n + " events is truncated");
        }
        buf.position(end);
        org.apache.flink.runtime.state.AbstractKeyedStateBackend<Object> backend = fb.backend;
        FlinkBackend.LogicalTime time = fb.time;
        ValueState<Object> value = l.value;
        ListState<Object> list = l.list;
        MapState<Object, Object> map = l.map;
        ReducingState<Object> reducing = l.reducing;
        AggregatingState<Object, Object> aggregating = l.aggregating;
        LongLongMap shadow = l.shadow;
        long ttl = l.ttlMs;
        boolean verify = l.verify;
        boolean refresh = l.refresh;
        boolean wall = l.wall;
        boolean paced = l.paced;
        long lateMs = (long) l.speedup; // one real ms, in clock ms
        boolean latency = l.latency;
        long[] buckets = l.buckets;
        long lastT = l.lastT;
        long bad = 0;
        long post = 0;
        long postNanos = 0;
        long warmLeft = l.warmLeft;
        long during = 0;
        long duringNanos = 0;
        boolean async = !fb.inFlight.isEmpty();
        long gc0 = l.busyWindowStart();
        long stamp = System.nanoTime();
        for (int i = 0; i < n; i++) {
            // a checkpoint's asynchronous phase runs beside this record? Once one finished, the
            // task completes it here, as Flink's task on the completion notification
            boolean inAsync = false;
            if (async) {
                async = fb.completeDone();
                inAsync = async;
            }
            long k = buf.getLong(keysAt + 8 * i);
            long t;
            if (paced) {
                // released at its time on the paced clock; waiting is not busy time
                long due = buf.getLong(tsAt + 8 * i);
                l.waitUntil(due);
                long lag = l.wallNow() - due;
                l.lagBuckets[bucket(lag * 1_000_000L)]++;
                if (lag > lateMs) {
                    l.late++;
                }
                l.released++;
                stamp = System.nanoTime();
            }
            if (wall) {
                t = l.wallNow();
                time.now = t;
            } else {
                t = buf.getLong(tsAt + 8 * i);
                if (t != lastT) {
                    time.now = t;
                    lastT = t;
                }
            }
            backend.setCurrentKey(k);
            int op = buf.get(opsAt + i);
            switch (op) {
                case VALUE_GET: {
                    Object r = value.value();
                    if (verify && r != null) {
                        if (shadow.get(k, NEVER_WRITTEN) + ttl <= t) {
                            bad++;
                        } else if (refresh) {
                            shadow.put(k, wall ? l.wallNow() : t);
                        }
                    }
                    break;
                }
                case VALUE_UPDATE:
                    value.update(val(buf, l, longs, valsAt, i));
                    if (verify) {
                        shadow.put(k, wall ? l.wallNow() : t);
                    }
                    break;
                case LIST_ADD:
                    list.add(val(buf, l, longs, valsAt, i));
                    break;
                case MAP_PUT:
                    map.put(buf.getInt(mksAt + 4 * i), val(buf, l, longs, valsAt, i));
                    break;
                case VALUE_RMW: {
                    Object r = value.value();
                    if (verify && r != null) {
                        if (shadow.get(k, NEVER_WRITTEN) + ttl <= t) {
                            bad++;
                        } else if (refresh) {
                            shadow.put(k, wall ? l.wallNow() : t);
                        }
                    }
                    value.update(val(buf, l, longs, valsAt, i));
                    if (verify) {
                        shadow.put(k, wall ? l.wallNow() : t);
                    }
                    break;
                }
                case MAP_GET:
                    map.get(buf.getInt(mksAt + 4 * i));
                    break;
                case REDUCING_ADD:
                    reducing.add(val(buf, l, longs, valsAt, i));
                    break;
                case LIST_GET: {
                    Iterable<Object> items = list.get();
                    if (items != null) {
                        for (Object ignored : items) {
                            // walk every element, as the Python loop does
                        }
                    }
                    break;
                }
                case MAP_ITERATE: {
                    Iterable<Map.Entry<Object, Object>> entries = map.entries();
                    if (entries != null) {
                        for (Map.Entry<Object, Object> ignored : entries) {
                            // walk every entry, as the Python loop does
                        }
                    }
                    break;
                }
                case VALUE_CLEAR:
                    value.clear();
                    if (verify) {
                        shadow.put(k, NEVER_WRITTEN);
                    }
                    break;
                case MAP_REMOVE:
                    map.remove(buf.getInt(mksAt + 4 * i));
                    break;
                case AGGREGATING_ADD:
                    aggregating.add(val(buf, l, longs, valsAt, i));
                    break;
                default:
                    throw new IllegalArgumentException("unknown op code " + op);
            }
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
                if (latency) {
                    buckets[bucket(took)]++;
                }
            }
        }
        l.busyWindowEnd(gc0);
        l.lastT = lastT;
        l.warmLeft = warmLeft;
        l.records += n;
        l.postRecords += post;
        l.postNanos += postNanos;
        l.duringRecords += during;
        l.duringNanos += duringNanos;
        l.expiredReturned += bad;
    }

    private static Object val(ByteBuffer buf, Lane l, boolean longs, int valsAt, int i) {
        if (longs) {
            return buf.getLong(valsAt + 8 * i);
        }
        return l.payload(buf.getInt(valsAt + 4 * i));
    }

    /** metrics.bucket_index: exact below 64 ns, then 64 log-linear buckets per power of two. */
    static int bucket(long ns) {
        long v = Math.max(ns, 0L);
        if (v < SUB_BUCKETS) {
            return (int) v;
        }
        int exp = 64 - Long.numberOfLeadingZeros(v);
        int shift = Math.max(exp - SUB_BUCKET_BITS - 1, 0);
        long mantissa = v >>> shift;
        return (int) Math.min(shift * SUB_BUCKETS + mantissa, NUM_BUCKETS - 1);
    }

    /** A long -> long open-addressing map (no boxing on the hot path); never shrinks. */
    static final class LongLongMap {
        private long[] keys = new long[1 << 12];
        private long[] values = new long[1 << 12];
        private boolean[] used = new boolean[1 << 12];
        private int size;

        private static int mix(long k) {
            long h = k * 0x9E3779B97F4A7C15L;
            return (int) (h ^ (h >>> 32));
        }

        long get(long k, long missing) {
            int mask = keys.length - 1;
            for (int i = mix(k) & mask; used[i]; i = (i + 1) & mask) {
                if (keys[i] == k) {
                    return values[i];
                }
            }
            return missing;
        }

        void put(long k, long v) {
            int mask = keys.length - 1;
            int i = mix(k) & mask;
            while (used[i]) {
                if (keys[i] == k) {
                    values[i] = v;
                    return;
                }
                i = (i + 1) & mask;
            }
            used[i] = true;
            keys[i] = k;
            values[i] = v;
            if (++size * 2 > keys.length) {
                grow();
            }
        }

        private void grow() {
            long[] oldKeys = keys;
            long[] oldValues = values;
            boolean[] oldUsed = used;
            keys = new long[oldKeys.length * 2];
            values = new long[oldKeys.length * 2];
            used = new boolean[oldKeys.length * 2];
            size = 0;
            for (int i = 0; i < oldKeys.length; i++) {
                if (oldUsed[i]) {
                    put(oldKeys[i], oldValues[i]);
                }
            }
        }
    }
}
