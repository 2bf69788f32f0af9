package statebench.flink;

import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.api.java.tuple.Tuple4;
import org.apache.flink.api.java.tuple.Tuple6;
import org.apache.flink.api.java.typeutils.runtime.TupleSerializer;
import org.apache.flink.runtime.state.AbstractKeyedStateBackend;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.internal.InternalKvState;
import org.apache.flink.state.rocksdb.RocksDBKeyedStateBackend;
import org.apache.flink.state.rocksdb.StatebenchRocksAccess;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.TimerSerializer;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;

/**
 * The operator command family (opcodes 0x50-0x5F): workloads/operators' emulated Flink operators
 * run against Flink's own keyed state backend, access for access as the Python emulation.
 *
 * <p>Each kind ({@link Op} subclasses) registers the states of the Python module it mirrors, with
 * the same names and the spec's TTL where Flink applies one (not on window contents nor the
 * interval join's caches: Flink's windows and interval joins enable no state TTL), and makes
 * the same reads, writes and deletes per record:
 * dedup ({@code RowTimeDeduplicateFunction}: value {@code deduplicate-state}), regular_join
 * ({@code StreamingJoinOperator}: maps {@code left-records}/{@code right-records}, record ->
 * count, the records as Flink tuples of 4 and 6 fields), tumbling and sliding windows
 * ({@code WindowOperator}: value {@code window-contents} in one namespace per window, Flink's
 * {@link TimeWindow} and its serializer, as WindowOperator keeps it), group_agg
 * ({@code GroupAggFunction}: value {@code accState}), interval_join ({@code
 * TimeIntervalJoin}: maps {@code IntervalJoin{Left,Right}Cache}, values {@code
 * IntervalJoin{Left,Right}TimerState}, timers in the void namespace) and topn ({@code
 * AppendOnlyTopNFunction}: map {@code data-state-with-append} and an LRU buffer cache) and
 * session_window (merging WindowOperator: window contents per state window, the merging
 * window set, timers per window). Where the emulation keeps a window as a
 * map entry keyed by the window's end, this keeps it as Flink does: a value in the window's
 * namespace (one get and one put per record, one get and one clear at firing).
 *
 * <p>Timers are the keyed backend's own priority-queue state, created as InternalTimerServiceImpl
 * creates its event-time queue ({@code keyedBackend.create("_timer_state/event_" + service,
 * TimerSerializer)}, service window-timers or user-timers): a HeapPriorityQueueSet on the heap backend, a RocksDB column family on
 * RocksDB (FlinkBackend builds it with PriorityQueueStateType.ROCKSDB, Flink's default of
 * state.backend.rocksdb.timer-service.factory). The watermark is the emulation's, max ts -
 * bound - 1 advanced before each record; OP_FINISH is the final watermark (Long.MAX_VALUE).
 *
 * <p>The record loop, clock, pacing, warm-up and busy-time bookkeeping are the event lane's
 * ({@link Events.Lane}, installed into {@link Events} so that EV_CHECKPOINT, EV_WAIT and
 * EV_STATS work unchanged). Outputs are counted and hashed (kind and values, FNV-1a over longs
 * then a splitmix64 finaliser; backends/flink/operators.py computes the same hash): with a TTL
 * the operator keeps the multiset of its output hashes and OP_FINISH replays the task's input on
 * a fresh heap backend without TTL in this JVM, as the emulation's reference run, to count the
 * outputs that differ (ttl_changed_results).
 *
 * <p>Layouts: backends/flink/operators.py.
 */
final class Operators implements CommandFamily {
    static final int OP_OPEN = 0x50;
    static final int OP_APPLY = 0x51;
    static final int OP_SAMPLE = 0x52;
    static final int OP_FINISH = 0x53;
    static final int FIRST = 0x50;
    static final int LAST = 0x5F;

    static final int DEDUP = 0;
    static final int REGULAR_JOIN = 1;
    static final int TUMBLING = 2;
    static final int SLIDING = 3;
    static final int GROUP_AGG = 4;
    static final int INTERVAL_JOIN = 5;
    static final int TOPN = 6;
    static final int SESSION = 7;

    static final int AGG_MAX = 0;
    static final int AGG_SUM = 1;
    static final int AGG_COUNT = 2;

    // changelog kinds, as backends/flink/operators.py numbers them
    static final long INSERT = 0;
    static final long UPDATE_BEFORE = 1;
    static final long UPDATE_AFTER = 2;
    static final long DELETE = 3;

    static final int BID = 2;
    /** WindowOperator's timer service, and KeyedCoProcessOperator's (the interval join). */
    static final String WINDOW_TIMERS = "window-timers";
    static final String USER_TIMERS = "user-timers";
    /** A timer's logical bytes in a sample: key 8 + timestamp 8 + TimeWindow 16 (a void
     *  namespace is one byte: 17). */
    static final long TIMER_BYTES = 32;
    static final long VOID_TIMER_BYTES = 17;
    /** Bytes of one row of OP_APPLY's columns. */
    static final int ROW_BYTES = 8 + 8 + 1 + 8 + 8 + 8 + 4 + 8;

    private final Events events;
    private Op op;
    private Params params;
    private Events.Lane lane;
    /** With a TTL: every OP_APPLY's columns, for the reference run without TTL. */
    private final List<byte[]> inputs = new ArrayList<>();
    private final List<Integer> inputRows = new ArrayList<>();

    private Operators(Events events) {
        this.events = events;
    }

    static void install(Worker worker, Events events) {
        worker.register(FIRST, LAST, new Operators(events));
    }

    /** What an operator kind is parameterised by (OP_OPEN). */
    static final class Params {
        int kind;
        long bound;
        long windowMs;
        long slideMs;
        int agg;
        boolean retention;
        long lowerMs;
        long upperMs;
        int topN;
        long gapMs;
    }

    @Override
    public void execute(Worker worker, int opcode, Wire.In in, Wire.Out out) throws Exception {
        FlinkBackend b = worker.backend();
        switch (opcode) {
            case OP_OPEN:
                open(b, in);
                return;
            case OP_APPLY:
                apply(b, in);
                return;
            case OP_SAMPLE: {
                long now = in.i64();
                Events.Lane l = lane();
                long at = now == Long.MIN_VALUE ? l.wallNow() : now;
                List<Object> result = new ArrayList<>(Census.take(b, l.ttlMs, at));
                long timers = op.timers == null ? 0 : op.timers.size();
                result.set(0, (Long) result.get(0) + timers);
                result.set(2, (Long) result.get(2) + timers
                        * (params.kind == INTERVAL_JOIN ? VOID_TIMER_BYTES : TIMER_BYTES));
                long estimate = -1;
                if (b.backend instanceof RocksDBKeyedStateBackend) {
                    // RocksDB's own entry estimate over the operator's column families, the
                    // timers' included, as the flink-sql lane sums it; their bytes too
                    RocksDBKeyedStateBackend<?> rocks = (RocksDBKeyedStateBackend<?>) b.backend;
                    estimate = 0;
                    for (FlinkBackend.Registered r : b.states.values()) {
                        estimate += StatebenchRocksAccess.property(rocks, r.name,
                                "rocksdb.estimate-num-keys");
                    }
                    if (op.timers != null) {
                        String cf = "_timer_state/event_"
                                + (params.kind == INTERVAL_JOIN ? USER_TIMERS : WINDOW_TIMERS);
                        estimate += StatebenchRocksAccess.property(rocks, cf,
                                "rocksdb.estimate-num-keys");
                        result.set(4, (Long) result.get(4)
                                + StatebenchRocksAccess.property(rocks, cf,
                                        "rocksdb.total-sst-files-size")
                                + StatebenchRocksAccess.property(rocks, cf,
                                        "rocksdb.cur-size-all-mem-tables"));
                    }
                }
                result.add(at);
                result.add(estimate);
                out.result(result);
                return;
            }
            case OP_FINISH:
                lane();
                out.result(finish(b));
                return;
            default:
                throw new IllegalArgumentException("unknown operator opcode 0x"
                        + Integer.toHexString(opcode));
        }
    }

    private Events.Lane lane() {
        if (lane == null || op == null) {
            throw new IllegalStateException("no operator is open (OP_OPEN first)");
        }
        return lane;
    }

    /**
     * OP_OPEN u8 kind, the TTL fields of EV_OPEN (i64 ttl ms, u8 update, u8 visibility, u8
     * flags, i32 incremental size, u8 per record, i64 query time after num entries), u8 clock,
     * f64 speedup, i64 start ms, i64 warm-up records, u8 latency histogram, i64
     * out-of-orderness ms, i64 window ms, i64 slide ms, u8 aggregate, u8 retention, i64
     * interval join's lower bound ms, i64 its upper bound ms, i32 Top-N's N, i64 session gap
     * ms.
     */
    private void open(FlinkBackend b, Wire.In in) throws Exception {
        Params p = new Params();
        p.kind = in.u8();
        Events.Lane l = new Events.Lane();
        StateTtlConfig ttl = l.readHeader(in, false);
        p.bound = in.i64();
        p.windowMs = in.i64();
        p.slideMs = in.i64();
        p.agg = in.u8();
        p.retention = in.u8() == 1;
        p.lowerMs = in.i64();
        p.upperMs = in.i64();
        p.topN = in.i32();
        p.gapMs = in.i64();
        if (p.kind == SESSION && p.gapMs <= 0) {
            throw new IllegalArgumentException("gap must be > 0 ms, got " + p.gapMs);
        }
        if (p.kind == TOPN && p.topN < 1) {
            throw new IllegalArgumentException("top_n must be >= 1, got " + p.topN);
        }
        if (p.kind > SESSION) {
            throw new IllegalArgumentException("unknown operator kind " + p.kind);
        }
        if (p.agg > AGG_COUNT) {
            throw new IllegalArgumentException("unknown aggregate " + p.agg);
        }
        if ((p.kind == TUMBLING || p.kind == SLIDING) && (p.windowMs <= 0 || p.slideMs <= 0)) {
            throw new IllegalArgumentException("window and slide must be > 0 ms, got "
                    + p.windowMs + " and " + p.slideMs);
        }
        l.originNanos = System.nanoTime();
        if (l.warmLeft <= 0) {
            l.measureGc();
        }
        b.time.now = l.startMs;
        op = make(p, b, ttl, true);
        op.keepHashes = ttl != null;
        // EV_RESTORE: a restarted task registers the kind's states and timer queue again
        l.registrar = restored -> make(p, restored, ttl, false);
        params = p;
        lane = l;
        inputs.clear();
        inputRows.clear();
        events.use(l);
    }

    static Op make(Params p, FlinkBackend b, StateTtlConfig ttl, boolean census) throws Exception {
        Op o;
        switch (p.kind) {
            case DEDUP:
                o = new Dedup();
                break;
            case REGULAR_JOIN:
                o = new RegularJoin();
                break;
            case GROUP_AGG:
                o = new GroupAgg();
                break;
            case INTERVAL_JOIN:
                o = new IntervalJoin();
                break;
            case TOPN:
                o = new TopN();
                break;
            case SESSION:
                o = new Session();
                break;
            default:
                o = new Window();
                break;
        }
        o.p = p;
        o.fb = b;
        o.backend = b.backend;
        o.census = census;
        o.ttlMs = ttl == null ? -1 : ttl.getTimeToLive().toMillis();
        o.bind(ttl);
        return o;
    }

    /** OP_APPLY i32 n, then columns of n: key i64, ts i64, event type i8, person i64, auction
     *  i64, price i64, category i32, expires i64. */
    private void apply(FlinkBackend fb, Wire.In in) throws Exception {
        Events.Lane l = lane();
        ByteBuffer buf = in.buf;
        int n = buf.getInt();
        int base = buf.position();
        int end = base + ROW_BYTES * n;
        if (end > buf.limit()) {
            throw new IllegalArgumentException("OP_APPLY of " + n + " rows is truncated");
        }
        if (op.keepHashes) {
            byte[] copy = new byte[ROW_BYTES * n];
            buf.get(copy);
            inputs.add(copy);
            inputRows.add(n);
        }
        buf.position(end);
        Columns c = new Columns(buf, base, n);
        FlinkBackend.LogicalTime time = fb.time;
        Op o = op;
        boolean wall = l.wall;
        boolean paced = l.paced;
        long lateMs = (long) l.speedup; // one real ms, in clock ms
        boolean latency = l.latency;
        long[] buckets = l.buckets;
        long lastT = l.lastT;
        long post = 0;
        long postNanos = 0;
        long warmLeft = l.warmLeft;
        long during = 0;
        long duringNanos = 0;
        boolean async = !fb.inFlight.isEmpty();
        long gc0 = l.busyWindowStart();
        long stamp = System.nanoTime();
        for (int i = 0; i < n; i++) {
            boolean inAsync = false;
            if (async) {
                async = fb.completeDone();
                inAsync = async;
            }
            long ts = c.ts(i);
            if (paced) {
                l.waitUntil(ts);
                long lag = l.wallNow() - ts;
                l.lagBuckets[Events.bucket(lag * 1_000_000L)]++;
                if (lag > lateMs) {
                    l.late++;
                }
                l.released++;
                stamp = System.nanoTime();
            }
            if (wall) {
                time.now = l.wallNow();
            } else if (ts != lastT) {
                time.now = ts;
                lastT = ts;
            }
            o.advance(ts);
            o.element(c, i);
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
                    buckets[Events.bucket(took)]++;
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
    }

    /**
     * The end of input: the final watermark fires every timer (not busy time); with a TTL the
     * reference run without TTL over the same input on a fresh heap backend of this task's key
     * groups. [outputs, output digest, timers registered, timers fired, changed outputs,
     * compared outputs (both -1 without a TTL), state accesses before the final watermark].
     */
    private List<Object> finish(FlinkBackend b) throws Exception {
        long accesses = op.accesses;
        op.advanceTo(Long.MAX_VALUE);
        long changed = -1;
        long compared = -1;
        if (op.keepHashes) {
            FlinkBackend.Options o = new FlinkBackend.Options();
            o.maxParallelism = b.options.maxParallelism;
            o.keyGroupStart = b.options.keyGroupStart;
            o.keyGroupEnd = b.options.keyGroupEnd;
            o.dir = new java.io.File(b.options.dir, "reference-" + System.nanoTime()).getPath();
            try (FlinkBackend ref = new FlinkBackend(o)) {
                ref.time.now = lane.startMs;
                Op r = make(params, ref, null, false);
                r.keepHashes = true;
                for (int k = 0; k < inputs.size(); k++) {
                    Columns c = new Columns(ByteBuffer.wrap(inputs.get(k)), 0, inputRows.get(k));
                    for (int i = 0; i < c.n; i++) {
                        r.advance(c.ts(i));
                        r.element(c, i);
                    }
                }
                r.advanceTo(Long.MAX_VALUE);
                long[] diff = compare(op.hashes, r.hashes);
                changed = diff[0];
                compared = diff[1];
            }
            inputs.clear();
            inputRows.clear();
        }
        List<Object> result = new ArrayList<>();
        result.add(op.outputs);
        result.add(op.digest);
        result.add(op.registered);
        result.add(op.fired);
        result.add(changed);
        result.add(compared);
        result.add(accesses);
        return result;
    }

    /** [changed, compared] of two output multisets (workloads/operators/results.py). */
    static long[] compare(Map<Long, long[]> a, Map<Long, long[]> b) {
        long changed = 0;
        long compared = 0;
        for (Map.Entry<Long, long[]> e : a.entrySet()) {
            long x = e.getValue()[0];
            long[] other = b.get(e.getKey());
            long y = other == null ? 0 : other[0];
            changed += Math.abs(x - y);
            compared += Math.max(x, y);
        }
        for (Map.Entry<Long, long[]> e : b.entrySet()) {
            if (!a.containsKey(e.getKey())) {
                changed += e.getValue()[0];
                compared += e.getValue()[0];
            }
        }
        return new long[] {changed, compared};
    }

    /** OP_APPLY's columns, read in place. */
    static final class Columns {
        final ByteBuffer buf;
        final int n;
        private final int keys;
        private final int tss;
        private final int types;
        private final int persons;
        private final int auctions;
        private final int prices;
        private final int categories;
        private final int expires;

        Columns(ByteBuffer buf, int base, int n) {
            this.buf = buf;
            this.n = n;
            keys = base;
            tss = keys + 8 * n;
            types = tss + 8 * n;
            persons = types + n;
            auctions = persons + 8 * n;
            prices = auctions + 8 * n;
            categories = prices + 8 * n;
            expires = categories + 4 * n;
        }

        long key(int i) {
            return buf.getLong(keys + 8 * i);
        }

        long ts(int i) {
            return buf.getLong(tss + 8 * i);
        }

        int type(int i) {
            return buf.get(types + i);
        }

        long person(int i) {
            return buf.getLong(persons + 8 * i);
        }

        long auction(int i) {
            return buf.getLong(auctions + 8 * i);
        }

        long price(int i) {
            return buf.getLong(prices + 8 * i);
        }

        int category(int i) {
            return buf.getInt(categories + 4 * i);
        }

        long expires(int i) {
            return buf.getLong(expires + 8 * i);
        }
    }

    /** One output's hash: FNV-1a over the kind and the values as longs, splitmix64-finalised. */
    static long hash(long kind, long... values) {
        long h = 0xcbf29ce484222325L;
        h = (h ^ kind) * 0x100000001b3L;
        for (long v : values) {
            h = (h ^ v) * 0x100000001b3L;
        }
        h = (h ^ (h >>> 30)) * 0xbf58476d1ce4e5b9L;
        h = (h ^ (h >>> 27)) * 0x94d049bb133111ebL;
        return h ^ (h >>> 31);
    }

    static long accumulate(int agg, Long acc, long v) {
        switch (agg) {
            case AGG_MAX:
                return acc == null || v > acc ? v : acc;
            case AGG_SUM:
                return acc == null ? v : acc + v;
            default:
                return acc == null ? 1 : acc + 1;
        }
    }

    /** What every kind shares: its states, timers, the watermark and the outputs. */
    abstract static class Op {
        Params p;
        FlinkBackend fb;
        AbstractKeyedStateBackend<Object> backend;
        boolean census;
        /** The state TTL in ms (-1: none), for what a kind ties to it besides its states. */
        long ttlMs;
        boolean keepHashes;
        final Map<Long, long[]> hashes = new HashMap<>();
        long outputs;
        long digest;
        long watermark = Long.MIN_VALUE;
        Object currentKey;
        KeyGroupedInternalPriorityQueue<TimerHeapInternalTimer<Object, Object>> timers;
        /** The timers registered and not yet fired: the queue is a set, a registration of one
         *  already there changes nothing and is not counted (the emulation's rule). */
        final HashSet<TimerHeapInternalTimer<Object, Object>> live = new HashSet<>();
        long registered;
        long fired;
        /** State accesses (each state call, each timer written or removed), as the
         *  emulation's counted views. */
        long accesses;

        abstract void bind(StateTtlConfig ttl) throws Exception;

        abstract void process(Columns c, int i) throws Exception;

        void onTimer(TimerHeapInternalTimer<Object, Object> timer) throws Exception {
            throw new IllegalStateException("this operator registers no timers");
        }

        /** Registers `desc` (with the TTL when given) in `namespace`, listed for the samples. */
        @SuppressWarnings({"unchecked", "rawtypes"})
        <N> State register(int kind, StateDescriptor<?, ?> desc, StateTtlConfig ttl, N namespace,
                           TypeSerializer<N> nsSerializer) throws Exception {
            if (ttl != null) {
                desc.enableTimeToLive(ttl);
            }
            State state = backend.getPartitionedState(namespace, nsSerializer,
                    (StateDescriptor) desc);
            if (census) {
                fb.states.put(200 + fb.states.size(),
                        new FlinkBackend.Registered(kind, desc.getName(), desc, state));
            }
            return state;
        }

        void setKey(Object key) {
            if (!key.equals(currentKey)) {
                currentKey = key;
                backend.setCurrentKey(key);
            }
        }

        void element(Columns c, int i) throws Exception {
            setKey(c.key(i));
            process(c, i);
        }

        void advance(long ts) throws Exception {
            long wm = ts - p.bound - 1;
            if (wm > watermark) {
                advanceTo(wm);
            }
        }

        /** InternalTimerServiceImpl.advanceWatermark: fire every timer at or before `wm`. */
        void advanceTo(long wm) throws Exception {
            watermark = wm;
            if (timers == null) {
                return;
            }
            TimerHeapInternalTimer<Object, Object> timer;
            while ((timer = timers.peek()) != null && timer.getTimestamp() <= wm) {
                timers.poll();
                live.remove(timer);
                setKey(timer.getKey());
                fired++;
                accesses++;
                onTimer(timer);
            }
        }

        /** The event-time timer queue, as InternalTimerServiceImpl creates it. */
        @SuppressWarnings({"unchecked", "rawtypes"})
        void createTimers(String service, TypeSerializer<?> namespaceSerializer) {
            timers = (KeyGroupedInternalPriorityQueue) backend.create("_timer_state/event_" + service,
                    new TimerSerializer<>(backend.getKeySerializer(), namespaceSerializer));
        }

        void registerTimer(long ts, Object namespace) {
            TimerHeapInternalTimer<Object, Object> timer =
                    new TimerHeapInternalTimer<>(ts, currentKey, namespace);
            if (live.add(timer)) {
                registered++;
                accesses++;
            }
            timers.add(timer); // InternalTimerServiceImpl.registerEventTimeTimer: a set
        }

        /** Deletes a registered timer (InternalTimerServiceImpl.deleteEventTimeTimer); one not
         *  registered changes nothing, as the emulation's. */
        void deleteTimer(long ts, Object namespace) {
            TimerHeapInternalTimer<Object, Object> timer =
                    new TimerHeapInternalTimer<>(ts, currentKey, namespace);
            if (live.remove(timer)) {
                accesses++;
                timers.remove(timer);
            }
        }

        void emit(long kind, long... values) {
            long h = hash(kind, values);
            outputs++;
            digest += h;
            if (keepHashes) {
                long[] count = hashes.get(h);
                if (count == null) {
                    hashes.put(h, new long[] {1});
                } else {
                    count[0]++;
                }
            }
        }
    }

    /** dedup: RowTimeDeduplicateFunction keeping the last row (workloads/operators/dedup.py). */
    static final class Dedup extends Op {
        ValueState<byte[]> state;

        @Override
        @SuppressWarnings("unchecked")
        void bind(StateTtlConfig ttl) throws Exception {
            state = (ValueState<byte[]>) register(FlinkBackend.VALUE,
                    new ValueStateDescriptor<>("deduplicate-state",
                            BytePrimitiveArraySerializer.INSTANCE),
                    ttl, VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE);
        }

        @Override
        void process(Columns c, int i) throws Exception {
            long ts = c.ts(i);
            long bidder = c.person(i);
            long auction = c.auction(i);
            long price = c.price(i);
            byte[] previous = state.value();
            accesses += 2;
            if (previous == null) {
                emit(INSERT, auction, bidder, price, ts);
            } else {
                ByteBuffer before = ByteBuffer.wrap(previous);
                long beforeTs = before.getLong(24);
                if (ts < beforeTs) {
                    return;
                }
                emit(UPDATE_BEFORE, before.getLong(0), before.getLong(8), before.getLong(16),
                        beforeTs);
                emit(UPDATE_AFTER, auction, bidder, price, ts);
            }
            byte[] row = new byte[32];
            ByteBuffer.wrap(row).putLong(auction).putLong(bidder).putLong(price).putLong(ts);
            state.update(row);
        }
    }

    /** regular_join: StreamingJoinOperator, InputSideHasNoUniqueKey on both sides
     *  (workloads/operators/regular_join.py). */
    static final class RegularJoin extends Op {
        MapState<Tuple4<Long, Long, Long, Long>, Integer> left;
        MapState<Tuple6<Long, Long, Long, Integer, Long, Long>, Integer> right;

        @Override
        @SuppressWarnings({"unchecked", "rawtypes"})
        void bind(StateTtlConfig ttl) throws Exception {
            TypeSerializer l = LongSerializer.INSTANCE;
            TypeSerializer in = IntSerializer.INSTANCE;
            TupleSerializer bid = new TupleSerializer(Tuple4.class,
                    new TypeSerializer[] {l, l, l, l});
            TupleSerializer auction = new TupleSerializer(Tuple6.class,
                    new TypeSerializer[] {l, l, l, in, l, l});
            left = (MapState) register(FlinkBackend.MAP,
                    new MapStateDescriptor<>("left-records", bid, IntSerializer.INSTANCE),
                    ttl, VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE);
            right = (MapState) register(FlinkBackend.MAP,
                    new MapStateDescriptor<>("right-records", auction, IntSerializer.INSTANCE),
                    ttl, VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE);
        }

        @Override
        void process(Columns c, int i) throws Exception {
            long ts = c.ts(i);
            long person = c.person(i);
            long auction = c.auction(i);
            long price = c.price(i);
            if (c.type(i) == BID) {
                Iterable<Map.Entry<Tuple6<Long, Long, Long, Integer, Long, Long>, Integer>> it =
                        right.entries();
                if (it != null) {
                    for (Map.Entry<Tuple6<Long, Long, Long, Integer, Long, Long>, Integer> e : it) {
                        Tuple6<Long, Long, Long, Integer, Long, Long> a = e.getKey();
                        for (int k = 0; k < e.getValue(); k++) {
                            emit(INSERT, auction, person, price, ts, a.f1, a.f3, a.f5);
                        }
                    }
                }
                Tuple4<Long, Long, Long, Long> record = Tuple4.of(auction, person, price, ts);
                accesses += 3;
                Integer count = left.get(record);
                left.put(record, count == null ? 1 : count + 1);
            } else {
                int category = c.category(i);
                Iterable<Map.Entry<Tuple4<Long, Long, Long, Long>, Integer>> it = left.entries();
                if (it != null) {
                    for (Map.Entry<Tuple4<Long, Long, Long, Long>, Integer> e : it) {
                        Tuple4<Long, Long, Long, Long> b = e.getKey();
                        for (int k = 0; k < e.getValue(); k++) {
                            emit(INSERT, auction, b.f1, b.f2, b.f3, person, category, ts);
                        }
                    }
                }
                Tuple6<Long, Long, Long, Integer, Long, Long> record =
                        Tuple6.of(auction, person, price, category, c.expires(i), ts);
                accesses += 3;
                Integer count = right.get(record);
                right.put(record, count == null ? 1 : count + 1);
            }
        }
    }

    /** tumbling_window and sliding_window: WindowOperator + EventTimeTrigger with an
     *  incremental aggregate (workloads/operators/tumbling_window.py, sliding_window.py). */
    static final class Window extends Op {
        ValueState<Long> contents;
        InternalKvState<Object, TimeWindow, Long> namespaced;

        @Override
        @SuppressWarnings("unchecked")
        void bind(StateTtlConfig ttl) throws Exception {
            // no TTL: Flink's windows apply none (WindowOperator's descriptor from
            // WindowedStream; SQL's AbstractSyncStateWindowAggProcessor "window-aggs")
            contents = (ValueState<Long>) register(FlinkBackend.VALUE,
                    new ValueStateDescriptor<>("window-contents", LongSerializer.INSTANCE),
                    null, new TimeWindow(0, p.windowMs), new TimeWindow.Serializer());
            namespaced = (InternalKvState<Object, TimeWindow, Long>) contents;
            createTimers(WINDOW_TIMERS, new TimeWindow.Serializer());
        }

        @Override
        void process(Columns c, int i) throws Exception {
            long ts = c.ts(i);
            long price = c.price(i);
            long size = p.windowMs;
            long slide = p.kind == SLIDING ? p.slideMs : size;
            // the emulation's window_ends, newest window first
            for (long start = ts - Math.floorMod(ts, slide); start > ts - size; start -= slide) {
                long end = start + size;
                if (end - 1 <= watermark) {
                    continue; // isWindowLate
                }
                TimeWindow window = new TimeWindow(end - size, end);
                namespaced.setCurrentNamespace(window);
                accesses += 2;
                Long acc = contents.value();
                contents.update(accumulate(p.agg, acc, price));
                registerTimer(window.maxTimestamp(), window); // EventTimeTrigger.onElement
                registerTimer(window.maxTimestamp(), window); // registerCleanupTimer: same time
            }
        }

        @Override
        void onTimer(TimerHeapInternalTimer<Object, Object> timer) throws Exception {
            TimeWindow window = (TimeWindow) timer.getNamespace();
            namespaced.setCurrentNamespace(window);
            accesses += 2;
            Long value = contents.value();
            if (value != null) {
                emit(INSERT, (Long) timer.getKey(), window.getEnd(), value);
            }
            contents.clear();
        }
    }

    /** group_agg: GroupAggFunction over append-only input (workloads/operators/group_agg.py). */
    static final class GroupAgg extends Op {
        ValueState<Long> acc;

        @Override
        @SuppressWarnings("unchecked")
        void bind(StateTtlConfig ttl) throws Exception {
            acc = (ValueState<Long>) register(FlinkBackend.VALUE,
                    new ValueStateDescriptor<>("accState", LongSerializer.INSTANCE),
                    ttl, VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE);
        }

        @Override
        void process(Columns c, int i) throws Exception {
            accesses += 2;
            Long before = acc.value();
            long after = accumulate(p.agg, before, c.price(i));
            acc.update(after);
            long key = (Long) currentKey;
            if (before == null) {
                emit(INSERT, key, after);
            } else if (after != before || p.retention) {
                emit(UPDATE_BEFORE, key, before);
                emit(UPDATE_AFTER, key, after);
            }
        }
    }

    /** interval_join: RowTimeIntervalJoin / TimeIntervalJoin, inner, bids left and auctions
     *  right (workloads/operators/interval_join.py): caches MapState<Long, byte[]> (row time ->
     *  the rows of that time, each followed by its one-byte emitted flag), the other side's
     *  cleanup timer in a ValueState<Long> without TTL, timers in the void namespace of
     *  KeyedCoProcessOperator's "user-timers" service. The expiration times are operator
     *  fields shared by every key, as in Flink. Where TimeIntervalJoin means "before every
     *  row" by 0 (the expiration times' start, RowTimeIntervalJoin's operator time floored at
     *  0, removeExpiredRows' earliestTimestamp > 0) this twin uses BEFORE_ANY_ROW: below every
     *  row time, as Flink's 0 is below every epoch time, where statebench's Nexmark time
     *  starts at 0 (interval_join.py's docstring). */
    static final class IntervalJoin extends Op {
        static final int BID_BYTES = 32;
        static final int AUCTION_BYTES = 44;
        /** interval_join.BEFORE_ANY_ROW: far from Long's ends, so time - size - 1 does not
         *  overflow. */
        static final long BEFORE_ANY_ROW = -(1L << 62);
        MapState<Long, byte[]> lcache;
        MapState<Long, byte[]> rcache;
        ValueState<Long> ltimer;
        ValueState<Long> rtimer;
        long leftSize;
        long rightSize;
        long minCleanup;
        long leftExpiration = BEFORE_ANY_ROW;
        long rightExpiration = BEFORE_ANY_ROW;

        @Override
        @SuppressWarnings("unchecked")
        void bind(StateTtlConfig ttl) throws Exception {
            leftSize = -p.lowerMs;
            rightSize = p.upperMs;
            // table.exec.interval-join.min-cleanup-interval's default (0 since Flink 1.18;
            // interval_join.MIN_CLEANUP_INTERVAL_MS), which StreamExecIntervalJoin passes on
            minCleanup = 0;
            // no TTL: TimeIntervalJoin.open enables none (its timers clean the caches)
            lcache = (MapState<Long, byte[]>) register(FlinkBackend.MAP,
                    new MapStateDescriptor<>("IntervalJoinLeftCache", LongSerializer.INSTANCE,
                            BytePrimitiveArraySerializer.INSTANCE),
                    null, VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE);
            rcache = (MapState<Long, byte[]>) register(FlinkBackend.MAP,
                    new MapStateDescriptor<>("IntervalJoinRightCache", LongSerializer.INSTANCE,
                            BytePrimitiveArraySerializer.INSTANCE),
                    null, VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE);
            ltimer = (ValueState<Long>) register(FlinkBackend.VALUE,
                    new ValueStateDescriptor<>("IntervalJoinLeftTimerState",
                            LongSerializer.INSTANCE),
                    null, VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE);
            rtimer = (ValueState<Long>) register(FlinkBackend.VALUE,
                    new ValueStateDescriptor<>("IntervalJoinRightTimerState",
                            LongSerializer.INSTANCE),
                    null, VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE);
            createTimers(USER_TIMERS, VoidNamespaceSerializer.INSTANCE);
        }

        long operatorTime() {
            return watermark > BEFORE_ANY_ROW ? watermark : BEFORE_ANY_ROW;
        }

        long expiration(long relativeSize) {
            long now = operatorTime();
            return now < Long.MAX_VALUE ? now - relativeSize - 1 : Long.MAX_VALUE;
        }

        @Override
        void process(Columns c, int i) throws Exception {
            long t = c.ts(i);
            long person = c.person(i);
            long auction = c.auction(i);
            long price = c.price(i);
            if (c.type(i) == BID) {
                byte[] record = new byte[BID_BYTES];
                ByteBuffer.wrap(record).putLong(auction).putLong(person).putLong(price).putLong(t);
                long lo = t - rightSize;
                long hi = t + leftSize;
                if (rightExpiration < hi) {
                    rightExpiration = expiration(rightSize);
                    join(rcache, lo, hi, rightExpiration, record, true);
                }
                if (operatorTime() < hi) {
                    cache(lcache, t, record);
                    accesses++;
                    if (rtimer.value() == null) {
                        registerCleanup(t, true);
                    }
                }
            } else {
                byte[] record = new byte[AUCTION_BYTES];
                ByteBuffer.wrap(record).putLong(auction).putLong(person).putLong(price)
                        .putInt(c.category(i)).putLong(c.expires(i)).putLong(t);
                long lo = t - leftSize;
                long hi = t + rightSize;
                if (leftExpiration < hi) {
                    leftExpiration = expiration(leftSize);
                    join(lcache, lo, hi, leftExpiration, record, false);
                }
                if (operatorTime() < hi) {
                    cache(rcache, t, record);
                    accesses++;
                    if (ltimer.value() == null) {
                        registerCleanup(t, false);
                    }
                }
            }
        }

        /** The other side's entries (one iteration, in row-time order as the emulation's
         *  sorted items), a +I per row in range, then a remove per expired entry. */
        void join(MapState<Long, byte[]> other, long lo, long hi, long expiration,
                  byte[] record, boolean left) throws Exception {
            accesses++;
            List<Map.Entry<Long, byte[]>> entries = sorted(other);
            for (Map.Entry<Long, byte[]> e : entries) {
                long time = e.getKey();
                if (lo <= time && time <= hi) {
                    byte[] packed = e.getValue();
                    int size = left ? AUCTION_BYTES : BID_BYTES;
                    for (int at = 0; at + size <= packed.length; at += size + 1) {
                        ByteBuffer row = ByteBuffer.wrap(packed, at, size).slice();
                        ByteBuffer mine = ByteBuffer.wrap(record);
                        ByteBuffer bid = left ? mine : row;
                        ByteBuffer auc = left ? row : mine;
                        emit(INSERT, bid.getLong(0), bid.getLong(8), bid.getLong(16),
                                bid.getLong(24), auc.getLong(8), auc.getLong(36));
                    }
                }
                if (time <= expiration) {
                    accesses++;
                    other.remove(time); // eager remove while joining
                }
            }
        }

        static List<Map.Entry<Long, byte[]>> sorted(MapState<Long, byte[]> map)
                throws Exception {
            List<Map.Entry<Long, byte[]>> out = new ArrayList<>();
            Iterable<Map.Entry<Long, byte[]>> it = map.entries();
            if (it != null) {
                for (Map.Entry<Long, byte[]> e : it) {
                    out.add(new java.util.AbstractMap.SimpleImmutableEntry<>(e.getKey(),
                            e.getValue()));
                }
            }
            out.sort(Map.Entry.comparingByKey());
            return out;
        }

        void cache(MapState<Long, byte[]> cache, long t, byte[] record) throws Exception {
            accesses += 2;
            byte[] rows = cache.get(t);
            int had = rows == null ? 0 : rows.length;
            byte[] grown = new byte[had + record.length + 1];
            if (rows != null) {
                System.arraycopy(rows, 0, grown, 0, had);
            }
            System.arraycopy(record, 0, grown, had, record.length); // then the 0 flag
            cache.put(t, grown);
        }

        void registerCleanup(long rowTime, boolean left) throws Exception {
            long size = left ? leftSize : rightSize;
            long cleanup = rowTime + size + minCleanup + 1;
            registerTimer(cleanup, VoidNamespace.INSTANCE);
            accesses++;
            (left ? rtimer : ltimer).update(cleanup);
        }

        @Override
        void onTimer(TimerHeapInternalTimer<Object, Object> timer) throws Exception {
            long ts = timer.getTimestamp();
            accesses++;
            Long leftCleanup = ltimer.value();
            if (leftCleanup != null && ts == leftCleanup) {
                rightExpiration = expiration(rightSize);
                removeExpired(rightExpiration, rcache, ltimer, false);
            }
            accesses++;
            Long rightCleanup = rtimer.value();
            if (rightCleanup != null && ts == rightCleanup) {
                leftExpiration = expiration(leftSize);
                removeExpired(leftExpiration, lcache, rtimer, true);
            }
        }

        void removeExpired(long expiration, MapState<Long, byte[]> cache,
                           ValueState<Long> timerState, boolean left) throws Exception {
            long earliest = 0;
            boolean rowLeft = false; // a row is left (Flink's earliestTimestamp > 0)
            accesses++;
            for (Map.Entry<Long, byte[]> e : sorted(cache)) {
                long time = e.getKey();
                if (time <= expiration) {
                    accesses++;
                    cache.remove(time);
                } else if (!rowLeft || time < earliest) {
                    earliest = time;
                    rowLeft = true;
                }
            }
            if (rowLeft) {
                registerCleanup(earliest, left);
            } else {
                accesses += 2;
                timerState.clear();
                cache.clear();
            }
        }
    }

    /** topn: AppendOnlyTopNFunction without the rank number (workloads/operators/topn.py):
     *  MapState<Long, byte[]> data-state-with-append (price -> the bids at that price, 32
     *  bytes each) and a TopNBuffer per key in an LRU cache of 10 000 / N keys whose entries
     *  expire the TTL after they were loaded, on the TTL clock. */
    static final class TopN extends Op {
        static final int TOPN_CACHE_SIZE = 10_000;
        static final int BID_BYTES = 32;
        MapState<Long, byte[]> data;
        int capacity;
        long now;
        /** key -> {buffer (price -> rows, ascending), loaded at (long[1])}, least recent first */
        final java.util.LinkedHashMap<Object, Object[]> cache =
                new java.util.LinkedHashMap<>(16, 0.75f, true);

        @Override
        @SuppressWarnings("unchecked")
        void bind(StateTtlConfig ttl) throws Exception {
            capacity = Math.max(1, TOPN_CACHE_SIZE / p.topN);
            data = (MapState<Long, byte[]>) register(FlinkBackend.MAP,
                    new MapStateDescriptor<>("data-state-with-append", LongSerializer.INSTANCE,
                            BytePrimitiveArraySerializer.INSTANCE),
                    ttl, VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE);
        }

        @Override
        void advance(long ts) throws Exception {
            now = ts; // the TTL clock the cache expires on
            super.advance(ts);
        }

        @SuppressWarnings("unchecked")
        java.util.TreeMap<Long, List<byte[]>> buffer() throws Exception {
            Object[] cached = cache.get(currentKey);
            if (cached != null && (ttlMs < 0 || ((long[]) cached[1])[0] + ttlMs > now)) {
                return (java.util.TreeMap<Long, List<byte[]>>) cached[0];
            }
            java.util.TreeMap<Long, List<byte[]>> buffer = new java.util.TreeMap<>();
            accesses++;
            Iterable<Map.Entry<Long, byte[]>> it = data.entries();
            if (it != null) {
                for (Map.Entry<Long, byte[]> e : it) {
                    byte[] packed = e.getValue();
                    List<byte[]> rows = new ArrayList<>();
                    for (int at = 0; at + BID_BYTES <= packed.length; at += BID_BYTES) {
                        rows.add(java.util.Arrays.copyOfRange(packed, at, at + BID_BYTES));
                    }
                    buffer.put(e.getKey(), rows);
                }
            }
            cache.put(currentKey, new Object[] {buffer, new long[] {now}});
            java.util.Iterator<Object> eldest = cache.keySet().iterator();
            while (cache.size() > capacity) {
                eldest.next();
                eldest.remove();
            }
            return buffer;
        }

        static byte[] join(List<byte[]> rows) {
            byte[] out = new byte[rows.size() * BID_BYTES];
            for (int k = 0; k < rows.size(); k++) {
                System.arraycopy(rows.get(k), 0, out, k * BID_BYTES, BID_BYTES);
            }
            return out;
        }

        @Override
        void process(Columns c, int i) throws Exception {
            long ts = c.ts(i);
            long bidder = c.person(i);
            long auction = c.auction(i);
            long price = c.price(i);
            java.util.TreeMap<Long, List<byte[]>> buffer = buffer();
            int count = 0;
            for (List<byte[]> rows : buffer.values()) {
                count += rows.size();
            }
            if (!buffer.isEmpty() && price <= buffer.firstKey() && count >= p.topN) {
                return; // not in the buffer's range (ties rank after the rows already there)
            }
            byte[] record = new byte[BID_BYTES];
            ByteBuffer.wrap(record).putLong(auction).putLong(bidder).putLong(price).putLong(ts);
            List<byte[]> same = buffer.computeIfAbsent(price, k -> new ArrayList<>());
            same.add(record);
            accesses++;
            data.put(price, join(same));
            if (count + 1 > p.topN) {
                long worst = buffer.firstKey();
                List<byte[]> rows = buffer.get(worst);
                byte[] last = rows.get(rows.size() - 1);
                accesses++;
                if (rows.size() <= 1) {
                    buffer.remove(worst);
                    data.remove(worst);
                } else {
                    rows.remove(rows.size() - 1);
                    data.put(worst, join(rows));
                }
                if (java.util.Arrays.equals(last, record)) {
                    return;
                }
                ByteBuffer b = ByteBuffer.wrap(last);
                emit(DELETE, b.getLong(0), b.getLong(8), b.getLong(16), b.getLong(24));
            }
            emit(INSERT, auction, bidder, price, ts);
        }
    }

    /** session_window: WindowOperator + EventTimeSessionWindows, merging
     *  (workloads/operators/session_window.py): ValueState<Long> window-contents in the
     *  namespace of each state window (TimeWindow), the merging window set as the emulation
     *  keeps it (one ValueState<byte[]> merging-window-set of packed (window, state window)
     *  pairs, no TTL, where Flink's MergingWindowSet keeps a ListState of tuples), timers at
     *  the window's end - 1 in the window's namespace. */
    static final class Session extends Op {
        static final java.util.Comparator<TimeWindow> ORDER =
                java.util.Comparator.comparingLong(TimeWindow::getStart)
                        .thenComparingLong(TimeWindow::getEnd);
        ValueState<Long> contents;
        InternalKvState<Object, TimeWindow, Long> namespaced;
        ValueState<byte[]> windows;

        @Override
        @SuppressWarnings("unchecked")
        void bind(StateTtlConfig ttl) throws Exception {
            // no TTL: Flink's windows apply none (as Window's)
            contents = (ValueState<Long>) register(FlinkBackend.VALUE,
                    new ValueStateDescriptor<>("window-contents", LongSerializer.INSTANCE),
                    null, new TimeWindow(0, p.gapMs), new TimeWindow.Serializer());
            namespaced = (InternalKvState<Object, TimeWindow, Long>) contents;
            windows = (ValueState<byte[]>) register(FlinkBackend.VALUE,
                    new ValueStateDescriptor<>("merging-window-set",
                            BytePrimitiveArraySerializer.INSTANCE),
                    null, VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE);
            createTimers(WINDOW_TIMERS, new TimeWindow.Serializer());
        }

        java.util.TreeMap<TimeWindow, TimeWindow> mapping() throws Exception {
            accesses++;
            byte[] packed = windows.value();
            java.util.TreeMap<TimeWindow, TimeWindow> out = new java.util.TreeMap<>(ORDER);
            if (packed != null) {
                ByteBuffer b = ByteBuffer.wrap(packed);
                for (int at = 0; at + 32 <= packed.length; at += 32) {
                    out.put(new TimeWindow(b.getLong(at), b.getLong(at + 8)),
                            new TimeWindow(b.getLong(at + 16), b.getLong(at + 24)));
                }
            }
            return out;
        }

        void persist(java.util.TreeMap<TimeWindow, TimeWindow> mapping) throws Exception {
            accesses++;
            if (mapping.isEmpty()) {
                windows.clear(); // ListState.update(empty list) clears it
                return;
            }
            ByteBuffer b = ByteBuffer.allocate(32 * mapping.size());
            for (Map.Entry<TimeWindow, TimeWindow> e : mapping.entrySet()) {
                b.putLong(e.getKey().getStart()).putLong(e.getKey().getEnd())
                        .putLong(e.getValue().getStart()).putLong(e.getValue().getEnd());
            }
            windows.update(b.array());
        }

        /** TimeWindow.mergeWindows as the emulation's merge_groups: groups of more than one
         *  intersecting window (bounds inclusive), by start; a set, so an equal window merges
         *  nothing. */
        static List<List<TimeWindow>> mergeGroups(java.util.Collection<TimeWindow> all) {
            java.util.TreeSet<TimeWindow> sorted = new java.util.TreeSet<>(ORDER);
            sorted.addAll(all);
            List<List<TimeWindow>> groups = new ArrayList<>();
            long coverStart = 0;
            long coverEnd = 0;
            boolean any = false;
            for (TimeWindow w : sorted) {
                if (any && w.getStart() <= coverEnd && w.getEnd() >= coverStart) {
                    groups.get(groups.size() - 1).add(w);
                    coverEnd = Math.max(coverEnd, w.getEnd());
                } else {
                    List<TimeWindow> g = new ArrayList<>();
                    g.add(w);
                    groups.add(g);
                    coverStart = w.getStart();
                    coverEnd = w.getEnd();
                    any = true;
                }
            }
            groups.removeIf(g -> g.size() <= 1);
            return groups;
        }

        @Override
        void process(Columns c, int i) throws Exception {
            long ts = c.ts(i);
            long price = c.price(i);
            java.util.TreeMap<TimeWindow, TimeWindow> mapping = mapping();
            java.util.TreeMap<TimeWindow, TimeWindow> initial = new java.util.TreeMap<>(mapping);
            TimeWindow fresh = new TimeWindow(ts, ts + p.gapMs);
            TimeWindow actual = fresh;
            boolean mergedNew = false;
            List<TimeWindow> all = new ArrayList<>(mapping.keySet());
            all.add(fresh);
            for (List<TimeWindow> group : mergeGroups(all)) {
                long start = Long.MAX_VALUE;
                long end = Long.MIN_VALUE;
                for (TimeWindow w : group) {
                    start = Math.min(start, w.getStart());
                    end = Math.max(end, w.getEnd());
                }
                TimeWindow cover = new TimeWindow(start, end);
                if (group.contains(fresh)) {
                    mergedNew = true;
                    actual = cover;
                }
                List<TimeWindow> existing = new ArrayList<>();
                for (TimeWindow w : group) {
                    if (mapping.containsKey(w)) {
                        existing.add(w);
                    }
                }
                TimeWindow stateWindow = mapping.get(existing.get(0));
                List<TimeWindow> mergedStates = new ArrayList<>();
                for (TimeWindow w : existing) {
                    mergedStates.add(mapping.remove(w));
                }
                mapping.put(cover, stateWindow);
                mergedStates.remove(stateWindow);
                onMerge(cover, group, stateWindow, mergedStates);
            }
            if (!mergedNew) {
                mapping.put(fresh, fresh);
            }
            TimeWindow stateWindow = mapping.get(actual);
            namespaced.setCurrentNamespace(stateWindow);
            accesses += 2;
            Long acc = contents.value();
            contents.update(accumulate(p.agg, acc, price));
            registerTimer(actual.maxTimestamp(), actual); // EventTimeTrigger.onElement
            registerTimer(actual.maxTimestamp(), actual); // registerCleanupTimer
            if (!mapping.equals(initial)) {
                persist(mapping);
            }
        }

        void onMerge(TimeWindow cover, List<TimeWindow> group, TimeWindow stateWindow,
                     List<TimeWindow> mergedStates) throws Exception {
            if (cover.maxTimestamp() > watermark) { // EventTimeTrigger.onMerge
                registerTimer(cover.maxTimestamp(), cover);
            }
            for (TimeWindow w : group) { // trigger clear and deleteCleanupTimer of each
                deleteTimer(w.maxTimestamp(), w);
                deleteTimer(w.maxTimestamp(), w);
            }
            Long merged = null;
            for (TimeWindow source : mergedStates) { // mergeNamespaces(target, sources)
                namespaced.setCurrentNamespace(source);
                accesses++;
                Long acc = contents.value();
                if (acc != null) {
                    accesses++;
                    contents.clear();
                    merged = merged == null ? acc : combine(p.agg, merged, acc);
                }
            }
            if (merged != null) {
                namespaced.setCurrentNamespace(stateWindow);
                accesses += 2;
                Long current = contents.value();
                contents.update(current == null ? merged : combine(p.agg, current, merged));
            }
        }

        static long combine(int agg, long a, long b) {
            return agg == AGG_MAX ? Math.max(a, b) : a + b;
        }

        @Override
        void onTimer(TimerHeapInternalTimer<Object, Object> timer) throws Exception {
            TimeWindow window = (TimeWindow) timer.getNamespace();
            java.util.TreeMap<TimeWindow, TimeWindow> mapping = mapping();
            TimeWindow stateWindow = mapping.get(window);
            if (stateWindow == null) {
                return; // a timer of a window merged away
            }
            namespaced.setCurrentNamespace(stateWindow);
            accesses += 2;
            Long value = contents.value();
            if (value != null) {
                emit(INSERT, (Long) timer.getKey(), window.getStart(), window.getEnd(), value);
            }
            contents.clear();
            mapping.remove(window);
            persist(mapping);
        }
    }
}
