package statebench.flink.sql;

import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.AbstractKeyedStateBackend;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.internal.InternalKvState;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.TimerSerializer;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import java.io.File;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The session window's state in a full keyed checkpoint, in the real SQL operator's format and
 * in the statebench lane's, on Flink's own HashMap and RocksDB keyed backends
 * (tests/flink/test_checkpoint_session_window.py).
 *
 * <p>Why: the real SQL job's peak checkpoint of q11 (SESSION window TVF, COUNT(*) per bidder
 * session) is 1.48x the emulated lane's on both backends. Flink 2.3 plans the SESSION TVF's
 * aggregate as a {@code WindowAggOperator} running an {@code UnsliceSyncStateWindowAggProcessor}
 * (the planner's choice, read here from the plan SqlJob runs, not assumed). Its keyed state,
 * per BinaryRowData key: {@code window-aggs}, a ValueState of the accumulator row in the
 * namespace of each state window (the table runtime's TimeWindow); {@code
 * session-window-mapping}, MergingWindowSet's MapState&lt;TimeWindow, TimeWindow&gt; (window -&gt;
 * state window) in the void namespace; and the {@code window-timers} service's event-time
 * timers (key, window end - 1, window), one per live window (its processing-time queue is
 * created too, and stays empty). The lane ({@code Operators.Session}): per long key a
 * ValueState&lt;Long&gt; {@code window-contents} per state window, one ValueState&lt;byte[]&gt;
 * {@code merging-window-set} of 32 packed bytes per window, and the same timers with a long
 * key. This program replays the run's bids through one session-window simulation (Flink's
 * merging rule: TimeWindow.mergeWindows, the state window of the first merged window kept,
 * timers at each live window's end - 1, a window fired and cleared when the watermark, max ts
 * - bound - 1, passes its timer) and writes every change in each side's format into two fresh
 * keyed backends (the key groups' halves: parallelism 2), snapshotting them (Flink's full
 * checkpoint) before the first bid at or after each checkpoint time.
 *
 * <p>Usage: {@code java -cp <this:RowFormatProbe:sql job classes:pyflink/lib/*>
 * statebench.flink.sql.SessionWindowProbe REQUEST.json}; the request: {@code dir} (RocksDB's
 * folders), {@code job} (SqlJob's job object of the session query; its events file need only
 * exist), {@code input} (per bid, in the job's order, big-endian longs: bidder, ts), {@code
 * bound_ms} (the watermark's out-of-orderness) and {@code times} ({@code {side: {backend: [ms,
 * ...]}}}). Prints one JSON object: the plan's operator and state types, the bytes per key and
 * per window of each side's format in each backend ({@code layout}), and the replays.
 */
public final class SessionWindowProbe {
    private static final int MAX_PARALLELISM = 128;
    /** InternalTimerServiceImpl's queue names, as WindowAggOperator and WindowOperator name
     *  their timer service. */
    static final String EVENT_TIMERS = "_timer_state/event_window-timers";
    static final String PROCESSING_TIMERS = "_timer_state/processing_window-timers";

    private SessionWindowProbe() {
    }

    /** A window of the simulation: [start, end), its timer at end - 1. */
    record W(long start, long end) implements Comparable<W> {
        long maxTimestamp() {
            return end - 1;
        }

        boolean intersects(W o) {
            return start <= o.end && end >= o.start; // TimeWindow.intersects
        }

        W cover(W o) {
            return new W(Math.min(start, o.start), Math.max(end, o.end));
        }

        @Override
        public int compareTo(W o) {
            int c = Long.compare(start, o.start);
            return c != 0 ? c : Long.compare(end, o.end);
        }
    }

    /** How one side keeps the session state in one keyed backend (the current key set). */
    interface Format {
        Object key(long bidder);

        void putAcc(W stateWindow, long count) throws Exception;

        void clearAcc(W stateWindow) throws Exception;

        /** The key's window -> state window mapping changed from `before` to `after`. */
        void mapping(TreeMap<W, W> before, TreeMap<W, W> after) throws Exception;

        void addTimer(W window);

        void deleteTimer(W window);
    }

    /** Makes a side's Format on one backend (registering its states there). */
    interface FormatFactory {
        TypeSerializer<Object> keySerializer();

        Object key(long bidder);

        Format open(AbstractKeyedStateBackend<Object> backend) throws Exception;
    }

    // --------------------------------------------------------------------------------------
    // The real operator, from the plan SqlJob runs
    // --------------------------------------------------------------------------------------

    /** The plan's session window operator: its processor, key, window and accumulator types. */
    static final class Plan {
        Object operator;
        Object processor;
        TypeSerializer<Object> keySerializer;
        InternalTypeInfo<RowData> keyType;
        TypeSerializer<Object> windowSerializer;
        TypeSerializer<RowData> accSerializer;
        RowType accType;
    }

    @SuppressWarnings("unchecked")
    static Plan plan(SqlJob.Job job) throws Exception {
        StreamNode node = RowFormatProbe.keyedNode(job);
        Plan p = new Plan();
        p.operator = RowFormatProbe.operator(node);
        p.processor = RowFormatProbe.field(p.operator, "windowProcessor");
        p.keySerializer = (TypeSerializer<Object>) node.getStateKeySerializer();
        p.keyType = (InternalTypeInfo<RowData>)
                ((org.apache.flink.api.java.typeutils.ResultTypeQueryable<?>)
                        node.getStatePartitioners()[0]).getProducedType();
        // UnsliceSyncStateWindowAggProcessor.createWindowSerializer: the merging assigner's
        p.windowSerializer = (TypeSerializer<Object>) p.processor.getClass()
                .getMethod("createWindowSerializer").invoke(p.processor);
        p.accSerializer = (TypeSerializer<RowData>) RowFormatProbe.field(p.processor,
                "accSerializer");
        LogicalType[] types = (LogicalType[]) RowFormatProbe.field(p.accSerializer, "types");
        p.accType = RowType.of(types);
        return p;
    }

    /** The table runtime's TimeWindow of `w` (the SQL operator's namespace and map entries). */
    static Object tableWindow(W w) {
        return org.apache.flink.table.runtime.operators.window.TimeWindow.of(w.start, w.end);
    }

    /** SQL's format: UnsliceSyncStateWindowAggProcessor's window-aggs, MergingWindowSet's
     *  session-window-mapping, WindowAggOperator's window-timers (both queues). */
    static FormatFactory sqlFormat(Plan p) {
        RowDataSerializer keyRows = p.keyType.toRowSerializer();
        RowType keyRow = p.keyType.toRowType();
        return new FormatFactory() {
            @Override
            public TypeSerializer<Object> keySerializer() {
                return p.keySerializer;
            }

            @Override
            public Object key(long bidder) {
                return keyRows.toBinaryRow(RowFormatProbe.row(keyRow, f -> bidder)).copy();
            }

            @Override
            @SuppressWarnings({"unchecked", "rawtypes"})
            public Format open(AbstractKeyedStateBackend<Object> b) throws Exception {
                ValueState<RowData> aggs = (ValueState<RowData>) b.getPartitionedState(
                        tableWindow(new W(0, 1)), p.windowSerializer,
                        new ValueStateDescriptor<>("window-aggs", p.accSerializer));
                InternalKvState<Object, Object, RowData> ns =
                        (InternalKvState<Object, Object, RowData>) aggs;
                MapState<Object, Object> mapping = b.getPartitionedState(VoidNamespace.INSTANCE,
                        VoidNamespaceSerializer.INSTANCE, new MapStateDescriptor<>(
                                "session-window-mapping", p.windowSerializer,
                                p.windowSerializer));
                KeyGroupedInternalPriorityQueue timers = (KeyGroupedInternalPriorityQueue)
                        b.create(EVENT_TIMERS, new TimerSerializer<>(p.keySerializer,
                                p.windowSerializer));
                b.create(PROCESSING_TIMERS, new TimerSerializer<>(p.keySerializer,
                        p.windowSerializer));
                return new Format() {
                    @Override
                    public Object key(long bidder) {
                        throw new UnsupportedOperationException();
                    }

                    @Override
                    public void putAcc(W w, long count) throws Exception {
                        ns.setCurrentNamespace(tableWindow(w));
                        aggs.update(RowFormatProbe.row(p.accType, f -> count));
                    }

                    @Override
                    public void clearAcc(W w) {
                        ns.setCurrentNamespace(tableWindow(w));
                        aggs.clear();
                    }

                    @Override
                    public void mapping(TreeMap<W, W> before, TreeMap<W, W> after)
                            throws Exception {
                        for (Map.Entry<W, W> e : before.entrySet()) {
                            if (!after.containsKey(e.getKey())) {
                                mapping.remove(tableWindow(e.getKey()));
                            }
                        }
                        for (Map.Entry<W, W> e : after.entrySet()) {
                            if (!e.getValue().equals(before.get(e.getKey()))) {
                                mapping.put(tableWindow(e.getKey()), tableWindow(e.getValue()));
                            }
                        }
                    }

                    @Override
                    public void addTimer(W w) {
                        timers.add(new TimerHeapInternalTimer<>(w.maxTimestamp(),
                                b.getCurrentKey(), tableWindow(w)));
                    }

                    @Override
                    public void deleteTimer(W w) {
                        timers.remove(new TimerHeapInternalTimer<>(w.maxTimestamp(),
                                b.getCurrentKey(), tableWindow(w)));
                    }
                };
            }
        };
    }

    // --------------------------------------------------------------------------------------
    // The lane's format, as Operators.Session registers it
    // --------------------------------------------------------------------------------------

    static Object streamWindow(W w) {
        return new org.apache.flink.streaming.api.windowing.windows.TimeWindow(w.start, w.end);
    }

    /** The lane's format: window-contents (Long per state window), merging-window-set (one
     *  byte[] of 32 bytes per window per key), the event-time window-timers queue. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static FormatFactory laneFormat() {
        TypeSerializer windows =
                new org.apache.flink.streaming.api.windowing.windows.TimeWindow.Serializer();
        return new FormatFactory() {
            @Override
            public TypeSerializer<Object> keySerializer() {
                return (TypeSerializer) LongSerializer.INSTANCE;
            }

            @Override
            public Object key(long bidder) {
                return bidder;
            }

            @Override
            public Format open(AbstractKeyedStateBackend<Object> b) throws Exception {
                ValueState<Long> contents = (ValueState<Long>) b.getPartitionedState(
                        streamWindow(new W(0, 1)), windows,
                        new ValueStateDescriptor<>("window-contents", LongSerializer.INSTANCE));
                InternalKvState<Object, Object, Long> ns =
                        (InternalKvState<Object, Object, Long>) contents;
                ValueState<byte[]> set = b.getPartitionedState(VoidNamespace.INSTANCE,
                        VoidNamespaceSerializer.INSTANCE, new ValueStateDescriptor<>(
                                "merging-window-set", BytePrimitiveArraySerializer.INSTANCE));
                KeyGroupedInternalPriorityQueue timers = (KeyGroupedInternalPriorityQueue)
                        b.create(EVENT_TIMERS,
                                new TimerSerializer<>(LongSerializer.INSTANCE, windows));
                return new Format() {
                    @Override
                    public Object key(long bidder) {
                        return bidder;
                    }

                    @Override
                    public void putAcc(W w, long count) throws Exception {
                        ns.setCurrentNamespace(streamWindow(w));
                        contents.update(count);
                    }

                    @Override
                    public void clearAcc(W w) {
                        ns.setCurrentNamespace(streamWindow(w));
                        contents.clear();
                    }

                    @Override
                    public void mapping(TreeMap<W, W> before, TreeMap<W, W> after)
                            throws Exception {
                        if (after.isEmpty()) {
                            set.clear();
                            return;
                        }
                        ByteBuffer packed = ByteBuffer.allocate(32 * after.size());
                        for (Map.Entry<W, W> e : after.entrySet()) {
                            packed.putLong(e.getKey().start).putLong(e.getKey().end)
                                    .putLong(e.getValue().start).putLong(e.getValue().end);
                        }
                        set.update(packed.array());
                    }

                    @Override
                    public void addTimer(W w) {
                        timers.add(new TimerHeapInternalTimer<>(w.maxTimestamp(),
                                b.getCurrentKey(), streamWindow(w)));
                    }

                    @Override
                    public void deleteTimer(W w) {
                        timers.remove(new TimerHeapInternalTimer<>(w.maxTimestamp(),
                                b.getCurrentKey(), streamWindow(w)));
                    }
                };
            }
        };
    }

    // --------------------------------------------------------------------------------------
    // The simulation: Flink's merging session windows over the bids
    // --------------------------------------------------------------------------------------

    /** Two keyed backends (the key groups' halves) with one side's format opened on each. */
    static final class Job implements AutoCloseable {
        final FormatFactory factory;
        final CloseableRegistry registry = new CloseableRegistry();
        final List<AbstractKeyedStateBackend<Object>> backends = new ArrayList<>();
        final List<Format> formats = new ArrayList<>();
        final KeyGroupRange[] ranges;

        Job(FormatFactory factory, String backend, File dir, KeyGroupRange... ranges)
                throws Exception {
            this.factory = factory;
            this.ranges = ranges;
            RowFormatProbe.Side side = new RowFormatProbe.Side("session",
                    factory.keySerializer(), List.of(), null, null);
            for (int t = 0; t < ranges.length; t++) {
                AbstractKeyedStateBackend<Object> b = RowFormatProbe.open(side, backend,
                        new File(dir, backend + "-" + t), registry, ranges[t]);
                backends.add(b);
                formats.add(factory.open(b));
            }
        }

        /** Sets the bidder as the current key of its backend; that backend's format. */
        Format at(long bidder) {
            Object key = factory.key(bidder);
            int group = KeyGroupRangeAssignment.assignToKeyGroup(key, MAX_PARALLELISM);
            for (int t = 0; t < ranges.length; t++) {
                if (ranges[t].contains(group)) {
                    backends.get(t).setCurrentKey(key);
                    return formats.get(t);
                }
            }
            throw new IllegalStateException("key group " + group + " in no range");
        }

        long snapshot(long id) throws Exception {
            long bytes = 0;
            for (AbstractKeyedStateBackend<Object> b : backends) {
                bytes += RowFormatProbe.snapshot(b, id);
            }
            return bytes;
        }

        @Override
        public void close() throws Exception {
            for (AbstractKeyedStateBackend<Object> b : backends) {
                b.dispose();
            }
            registry.close();
        }
    }

    /** The session windows of every key, each change written through the job's formats. */
    static final class Sessions {
        final long gap;
        final Job job;
        final Map<Long, TreeMap<W, W>> mappings = new HashMap<>();
        final Map<Long, Map<W, Long>> accs = new HashMap<>();
        /** Live timers in firing order: (time, bidder, start, end). */
        final TreeSet<long[]> timers = new TreeSet<>((a, b) -> {
            for (int i = 0; i < 4; i++) {
                int c = Long.compare(a[i], b[i]);
                if (c != 0) {
                    return c;
                }
            }
            return 0;
        });
        long watermark = Long.MIN_VALUE;
        long windows;

        Sessions(long gap, Job job) {
            this.gap = gap;
            this.job = job;
        }

        void addTimer(Format f, long bidder, W w) {
            if (timers.add(new long[] {w.maxTimestamp(), bidder, w.start, w.end})) {
                f.addTimer(w);
            }
        }

        void deleteTimer(Format f, long bidder, W w) {
            if (timers.remove(new long[] {w.maxTimestamp(), bidder, w.start, w.end})) {
                f.deleteTimer(w);
            }
        }

        /** The watermark advances to `wm`: every window whose timer it passes fires and is
         *  cleared (its acc, its mapping entry, its timer). */
        void advance(long wm) throws Exception {
            watermark = Math.max(watermark, wm);
            while (!timers.isEmpty() && timers.first()[0] <= watermark) {
                long[] t = timers.pollFirst();
                long bidder = t[1];
                W w = new W(t[2], t[3]);
                Format f = job.at(bidder);
                f.deleteTimer(w);
                TreeMap<W, W> mapping = mappings.get(bidder);
                TreeMap<W, W> before = new TreeMap<>(mapping);
                W state = mapping.remove(w);
                accs.get(bidder).remove(state);
                f.clearAcc(state);
                f.mapping(before, mapping);
                windows--;
                if (mapping.isEmpty()) {
                    mappings.remove(bidder);
                    accs.remove(bidder);
                }
            }
        }

        /** One bid: MergingWindowSet.addWindow of [ts, ts + gap), the merges' state and
         *  timers moved (MergingWindowProcessFunction), the acc counted in the state window,
         *  the actual window's timer registered. */
        void bid(long bidder, long ts) throws Exception {
            Format f = job.at(bidder);
            TreeMap<W, W> mapping = mappings.computeIfAbsent(bidder, k -> new TreeMap<>());
            Map<W, Long> acc = accs.computeIfAbsent(bidder, k -> new HashMap<>());
            TreeMap<W, W> before = new TreeMap<>(mapping);
            W fresh = new W(ts, ts + gap);
            List<W> merged = new ArrayList<>();
            W cover = fresh;
            for (W w : mapping.keySet()) { // TimeWindow.mergeWindows: the windows `fresh` joins
                if (w.intersects(cover)) {
                    merged.add(w);
                    cover = cover.cover(w);
                }
            }
            // windows the grown cover now reaches (sorted by start: one more pass suffices)
            for (W w : mapping.keySet()) {
                if (!merged.contains(w) && w.intersects(cover)) {
                    merged.add(w);
                    cover = cover.cover(w);
                }
            }
            W actual = fresh;
            if (merged.isEmpty()) {
                mapping.put(fresh, fresh);
                windows++;
            } else if (merged.size() == 1 && merged.get(0).equals(cover)) {
                actual = cover; // within a live window: nothing merges
            } else {
                actual = cover;
                W state = mapping.get(merged.get(0));
                long sum = acc.getOrDefault(state, 0L);
                for (W w : merged) {
                    W s = mapping.remove(w);
                    deleteTimer(f, bidder, w);
                    if (!s.equals(state)) {
                        sum += acc.remove(s);
                        f.clearAcc(s);
                    }
                }
                mapping.put(cover, state);
                windows -= merged.size() - 1;
                acc.put(state, sum);
                if (cover.maxTimestamp() > watermark) {
                    addTimer(f, bidder, cover);
                }
            }
            W state = mapping.get(actual);
            long count = acc.getOrDefault(state, 0L) + 1;
            acc.put(state, count);
            f.putAcc(state, count);
            addTimer(f, bidder, actual);
            if (!mapping.equals(before)) {
                f.mapping(before, mapping);
            }
        }
    }

    /** The bids replayed into `factory`'s format on `backend`, snapshotted before the first
     *  bid at or after each of `times`: [[time, bytes, keys, windows], ...]. */
    static ArrayNode replay(FormatFactory factory, String backend, long[][] input, long gap,
                            long bound, JsonNode times, File dir) throws Exception {
        int half = MAX_PARALLELISM / 2;
        ArrayNode out = SqlJob.JSON.createArrayNode();
        try (Job job = new Job(factory, backend, dir, KeyGroupRange.of(0, half - 1),
                KeyGroupRange.of(half, MAX_PARALLELISM - 1))) {
            Sessions s = new Sessions(gap, job);
            int next = 0;
            long id = 1;
            for (int i = 0; i <= input.length; i++) {
                long ts = i < input.length ? input[i][1] : Long.MAX_VALUE;
                while (next < times.size() && ts >= times.get(next).asLong()) {
                    ArrayNode point = out.addArray();
                    point.add(times.get(next).asLong());
                    point.add(job.snapshot(id++));
                    point.add(s.mappings.size());
                    point.add(s.windows);
                    next++;
                }
                if (i == input.length) {
                    break;
                }
                s.advance(ts - bound - 1);
                s.bid(input[i][0], ts);
            }
        }
        return out;
    }

    /** Full checkpoint bytes of `keys` keys holding `windows` windows each (one backend). */
    static long layoutBytes(FormatFactory factory, String backend, int keys, int windows,
                            long gap, File dir) throws Exception {
        try (Job job = new Job(factory, backend, dir, KeyGroupRange.of(0, MAX_PARALLELISM - 1))) {
            for (long k = 0; k < keys; k++) {
                Format f = job.at(1_000_000 + 7919 * k);
                TreeMap<W, W> mapping = new TreeMap<>();
                for (int w = 0; w < windows; w++) {
                    W window = new W(1_000 * k + 3 * gap * w, 1_000 * k + 3 * gap * w + gap);
                    mapping.put(window, window);
                    f.putAcc(window, w + 1);
                    f.addTimer(window);
                }
                f.mapping(new TreeMap<>(), mapping);
            }
            return job.snapshot(1);
        }
    }

    /** Bytes per key (its mapping entry's fixed part) and per window (acc, mapping entry,
     *  timer) of a side's format: three snapshots' differences. */
    static ObjectNode layout(FormatFactory factory, String backend, long gap, File dir)
            throws Exception {
        int n = 2_000;
        long one = layoutBytes(factory, backend, n, 1, gap, new File(dir, "a"));
        long two = layoutBytes(factory, backend, n, 2, gap, new File(dir, "b"));
        long keys = layoutBytes(factory, backend, 2 * n, 1, gap, new File(dir, "c"));
        double perWindow = (two - one) / (double) n;
        double perKey = (keys - one) / (double) n - perWindow;
        ObjectNode row = SqlJob.JSON.createObjectNode();
        row.put("per_window", perWindow);
        row.put("per_key", perKey);
        row.put("fixed", one - n * (perKey + perWindow));
        return row;
    }

    /** The plan's operator, processor and serializers, and one key's / acc's bytes. */
    static ObjectNode describe(Plan p, FormatFactory sql) throws Exception {
        ObjectNode out = SqlJob.JSON.createObjectNode();
        out.put("operator", p.operator.getClass().getSimpleName());
        out.put("processor", p.processor.getClass().getSimpleName());
        out.put("key_serializer", p.keySerializer.getClass().getSimpleName());
        out.put("window_serializer", p.windowSerializer.getClass().getName());
        out.put("acc_serializer", p.accSerializer.getClass().getSimpleName());
        out.put("acc_type", p.accType.asSummaryString());
        DataOutputSerializer buf = new DataOutputSerializer(64);
        p.keySerializer.serialize(sql.key(1L), buf);
        out.put("key_bytes", buf.length());
        buf.clear();
        p.accSerializer.serialize(RowFormatProbe.row(p.accType, f -> 1L), buf);
        out.put("acc_bytes", buf.length());
        buf.clear();
        p.windowSerializer.serialize(tableWindow(new W(0, 1)), buf);
        out.put("window_bytes", buf.length());
        return out;
    }

    public static void main(String[] argv) throws Exception {
        JsonNode request = SqlJob.JSON.readTree(new File(argv[0]));
        File dir = new File(request.path("dir").asText());
        SqlJob.Job job = SqlJob.Job.of(request.path("job"));
        long[][] input = RowFormatProbe.readData(new File(request.path("input").asText()), 2);
        long bound = request.path("bound_ms").asLong();
        Plan p = plan(job);
        FormatFactory sql = sqlFormat(p);
        FormatFactory lane = laneFormat();
        ObjectNode out = SqlJob.JSON.createObjectNode();
        out.set("plan", describe(p, sql));
        ObjectNode layouts = out.putObject("layout");
        ArrayNode rows = out.putArray("rows");
        for (String backend : new String[] {"hashmap", "rocksdb"}) {
            for (String side : new String[] {"sql", "lane"}) {
                FormatFactory format = side.equals("sql") ? sql : lane;
                layouts.with(backend).set(side, layout(format, backend, job.gapMs,
                        new File(dir, "layout")));
                JsonNode times = request.path("times").path(side).path(backend);
                if (!times.isArray()) {
                    continue;
                }
                ObjectNode row = rows.addObject();
                row.put("backend", backend);
                row.put("side", side);
                row.set("replay", replay(format, backend, input, job.gapMs, bound, times,
                        new File(dir, "replay")));
            }
        }
        System.out.println(SqlJob.JSON.writeValueAsString(out));
        System.exit(0);
    }
}
