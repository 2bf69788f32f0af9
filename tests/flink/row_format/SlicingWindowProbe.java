package statebench.flink.sql;

import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.AbstractKeyedStateBackend;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.internal.InternalValueState;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.TimerSerializer;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongFunction;

/**
 * The slicing windows' keyed state, replayed in Flink's own HashMap and RocksDB keyed backends
 * in the real SQL operator's format and in the lane's (tests/flink/test_checkpoint_slicing_windows.py).
 *
 * <p>Why: the real SQL job's tumbling (q7) and HOP (q5) window checkpoints differ from the
 * emulated operator's on flink-heap / flink-rocksdb, and the causes named are the row format
 * and HOP's slices. This program reads the SQL side's state from the plan SqlJob runs:
 * {@code WindowAggOperator}'s processor ({@code SliceUnsharedSyncStateWindowAggProcessor} for
 * TUMBLE, {@code SliceSharedSyncStateWindowAggProcessor} for HOP) registers
 * {@code ValueState<RowData> "window-aggs"} of its {@code accSerializer} in the slice end's
 * namespace ({@code LongSerializer}), under the group key's {@code BinaryRowData}, and its
 * "window-timers" service's event-time queue holds {@code TimerSerializer(key row, Long)}
 * timers; the lane's ({@code Operators.Window}): {@code ValueState<Long> "window-contents"} in
 * a {@code TimeWindow} namespace under a long key, timers {@code TimerSerializer(Long,
 * TimeWindow)}. Each side's history (computed by the test: which entries and timers each
 * operator writes and removes, in the records' order) is applied to two backends holding the
 * key groups' halves (parallelism 2), snapshotted (Flink's full checkpoint) before the first
 * record at or after each of the given times.
 *
 * <p>Usage: {@code java -cp <this:RowFormatProbe:sql job classes:pyflink/lib/*>
 * statebench.flink.sql.SlicingWindowProbe REQUEST.json}; the request holds {@code dir} and
 * {@code jobs}: SqlJob's job objects with {@code history} ({@code {side: file}}: rows of five
 * big-endian longs {@code (op, key, namespace, value, record ts)}, op {@link #PUT},
 * {@link #CLEAR}, {@link #ADD_TIMER}, {@link #DELETE_TIMER}; a namespace is a slice end (SQL)
 * or a window end (lane); a timer fires at namespace - 1) and {@code times}
 * ({@code {backend: [ms, ...]}}). Each side's format replays both histories (the other's
 * history in a side's format: what the format alone, or the history alone, accounts for).
 * Prints one JSON object.
 */
public final class SlicingWindowProbe {
    static final int PUT = 0;
    static final int CLEAR = 1;
    static final int ADD_TIMER = 2;
    static final int DELETE_TIMER = 3;
    static final int MAX_PARALLELISM = 128;

    private SlicingWindowProbe() {
    }

    /** One side's state as its operator registers it. */
    static final class WindowSide {
        String state;
        TypeSerializer<Object> keySerializer;
        ValueStateDescriptor<Object> descriptor;
        TypeSerializer<Object> namespaceSerializer;
        LongFunction<Object> key;
        LongFunction<Object> value;
        LongFunction<Object> namespace;
        /** The operator's timer queues (event time first; SQL's service also creates its
         *  processing-time queue, empty here). */
        List<String> queues = new ArrayList<>();
    }

    public static void main(String[] argv) throws Exception {
        JsonNode request = SqlJob.JSON.readTree(new File(argv[0]));
        File dir = new File(request.path("dir").asText());
        ObjectNode out = SqlJob.JSON.createObjectNode();
        ArrayNode rows = out.putArray("rows");
        for (JsonNode jobNode : request.path("jobs")) {
            SqlJob.Job job = SqlJob.Job.of(jobNode);
            JsonNode times = jobNode.path("times");
            for (String format : new String[] {"sql", "lane"}) {
                WindowSide side = format.equals("sql") ? sqlSide(job) : laneSide(job);
                for (String of : new String[] {"sql", "lane"}) {
                    long[][] history = RowFormatProbe.readData(
                            new File(jobNode.path("history").path(of).asText()), 5);
                    for (java.util.Iterator<String> it = times.fieldNames(); it.hasNext(); ) {
                        String backend = it.next();
                        ObjectNode row = rows.addObject();
                        row.put("kind", job.kind);
                        row.put("backend", backend);
                        row.put("side", format);
                        row.put("history", of);
                        describe(side, row);
                        row.set("replay", replay(side, backend, history, times.path(backend),
                                new File(dir, job.kind + "-" + format + "-" + of)));
                    }
                }
            }
        }
        System.out.println(SqlJob.JSON.writeValueAsString(out));
        System.exit(0);
    }

    /** The serializers and the bytes of one key, value, namespace and timer as they write. */
    static void describe(WindowSide side, ObjectNode row) throws Exception {
        row.put("state", side.state);
        row.put("key_serializer", side.keySerializer.getClass().getSimpleName());
        row.put("namespace_serializer", side.namespaceSerializer.getClass().getSimpleName());
        side.descriptor.initializeSerializerUnlessSet(new org.apache.flink.api.common.ExecutionConfig());
        row.put("value_serializer", side.descriptor.getSerializer().getClass().getSimpleName());
        row.put("ttl", side.descriptor.getTtlConfig().isEnabled());
        DataOutputSerializer buf = new DataOutputSerializer(64);
        side.keySerializer.serialize(side.key.apply(1), buf);
        row.put("key_bytes", buf.length());
        buf.clear();
        side.descriptor.getSerializer().serialize(side.value.apply(1), buf);
        row.put("value_bytes", buf.length());
        buf.clear();
        side.namespaceSerializer.serialize(side.namespace.apply(2_000), buf);
        row.put("namespace_bytes", buf.length());
        buf.clear();
        timerSerializer(side).serialize(new TimerHeapInternalTimer<>(1_999L, side.key.apply(1),
                side.namespace.apply(2_000)), buf);
        row.put("timer_bytes", buf.length());
    }

    static TypeSerializer<TimerHeapInternalTimer<Object, Object>> timerSerializer(WindowSide s) {
        return new TimerSerializer<>(s.keySerializer, s.namespaceSerializer);
    }

    // --------------------------------------------------------------------------------------
    // The two sides' states
    // --------------------------------------------------------------------------------------

    /** SQL's state, from the plan: the WindowAggOperator's processor's accumulator type, in
     *  the slice end's (Long) namespace, under the group key row; the operator's
     *  "window-timers" service (TimerSerializer of the key row and the Long slice end). */
    @SuppressWarnings("unchecked")
    static WindowSide sqlSide(SqlJob.Job j) throws Exception {
        StreamNode node = RowFormatProbe.keyedNode(j);
        Object op = RowFormatProbe.operator(node);
        if (!op.getClass().getSimpleName().equals("WindowAggOperator")) {
            throw new IllegalStateException("the keyed operator is " + op.getClass());
        }
        Object processor = RowFormatProbe.field(op, "windowProcessor");
        TypeSerializer<RowData> acc = (TypeSerializer<RowData>)
                RowFormatProbe.field(processor, "accSerializer");
        LogicalType[] accTypes = (LogicalType[]) RowFormatProbe.field(acc, "types");
        RowType accRow = RowType.of(accTypes);
        RowDataSerializer accRows = (RowDataSerializer) acc;
        InternalTypeInfo<RowData> keyType = (InternalTypeInfo<RowData>)
                ((org.apache.flink.api.java.typeutils.ResultTypeQueryable<?>)
                        node.getStatePartitioners()[0]).getProducedType();
        RowDataSerializer keyRows = keyType.toRowSerializer();
        RowType keyRow = keyType.toRowType();
        WindowSide side = new WindowSide();
        side.state = processor.getClass().getSimpleName() + " window-aggs "
                + accRow.asSummaryString() + " by " + keyRow.asSummaryString();
        side.keySerializer = (TypeSerializer<Object>) node.getStateKeySerializer();
        side.descriptor = new ValueStateDescriptor<>("window-aggs", (TypeSerializer) acc);
        side.namespaceSerializer = (TypeSerializer) LongSerializer.INSTANCE;
        // the key row's one field: the group key (auction); the accumulator's fields all hold
        // the value (a COUNT or MAX: fixed-length fields, whose bytes do not depend on it)
        side.key = k -> keyRows.toBinaryRow(RowFormatProbe.row(keyRow, f -> k)).copy();
        side.value = v -> accRows.toBinaryRow(RowFormatProbe.row(accRow, f -> v)).copy();
        side.namespace = ns -> (Object) ns;
        side.queues.add("_timer_state/event_window-timers");
        side.queues.add("_timer_state/processing_window-timers");
        return side;
    }

    /** The lane's state as Operators.Window registers it: ValueState<Long> window-contents in
     *  the TimeWindow namespace, long keys; the window-timers event-time queue. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static WindowSide laneSide(SqlJob.Job j) {
        long size = j.windowMs;
        WindowSide side = new WindowSide();
        side.state = "Operators.Window window-contents Long by Long";
        side.keySerializer = (TypeSerializer) LongSerializer.INSTANCE;
        side.descriptor = new ValueStateDescriptor<>("window-contents", (TypeSerializer)
                LongSerializer.INSTANCE);
        side.namespaceSerializer = (TypeSerializer) new TimeWindow.Serializer();
        side.key = k -> (Object) k;
        side.value = v -> (Object) v;
        side.namespace = end -> new TimeWindow(end - size, end);
        side.queues.add("_timer_state/event_window-timers");
        return side;
    }

    // --------------------------------------------------------------------------------------
    // The replay
    // --------------------------------------------------------------------------------------

    /** A backend of one key-group half and its state and queues, as the side registers them. */
    static final class Task {
        AbstractKeyedStateBackend<Object> backend;
        InternalValueState<Object, Object, Object> state;
        List<KeyGroupedInternalPriorityQueue<TimerHeapInternalTimer<Object, Object>>> queues =
                new ArrayList<>();
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static Task open(WindowSide side, String backend, File dir, CloseableRegistry registry,
                     KeyGroupRange range) throws Exception {
        RowFormatProbe.Side keyed = new RowFormatProbe.Side(side.state, side.keySerializer,
                side.descriptor, side.key, side.value);
        Task t = new Task();
        t.backend = RowFormatProbe.open(keyed, backend, dir, registry, range);
        t.state = (InternalValueState<Object, Object, Object>) t.backend.getPartitionedState(
                side.namespace.apply(2_000), side.namespaceSerializer, side.descriptor);
        for (String name : side.queues) {
            t.queues.add((KeyGroupedInternalPriorityQueue) ((org.apache.flink.runtime.state
                    .PriorityQueueSetFactory) t.backend).create(name, timerSerializer(side)));
        }
        return t;
    }

    /**
     * The history applied in order to two backends holding the key groups' halves, both
     * snapshotted before the first record at or after each of `times`. Returns [[time, bytes
     * of both snapshots, live entries, live timers], ...].
     */
    static ArrayNode replay(WindowSide side, String backend, long[][] history, JsonNode times,
                            File dir) throws Exception {
        int half = MAX_PARALLELISM / 2;
        KeyGroupRange[] ranges = {KeyGroupRange.of(0, half - 1),
            KeyGroupRange.of(half, MAX_PARALLELISM - 1)};
        CloseableRegistry registry = new CloseableRegistry();
        List<Task> tasks = new ArrayList<>();
        ArrayNode out = SqlJob.JSON.createArrayNode();
        long entries = 0;
        long timers = 0;
        try {
            for (int t = 0; t < 2; t++) {
                tasks.add(open(side, backend, new File(dir, backend + "-" + t), registry,
                        ranges[t]));
            }
            int next = 0;
            long id = 1;
            for (int i = 0; i <= history.length; i++) {
                long ts = i < history.length ? history[i][4] : Long.MAX_VALUE;
                while (next < times.size() && ts >= times.get(next).asLong()) {
                    long bytes = 0;
                    for (Task t : tasks) {
                        bytes += RowFormatProbe.snapshot(t.backend, id);
                    }
                    id++;
                    ArrayNode point = out.addArray();
                    point.add(times.get(next).asLong());
                    point.add(bytes);
                    point.add(entries);
                    point.add(timers);
                    next++;
                }
                if (i == history.length) {
                    break;
                }
                long[] r = history[i];
                Object key = side.key.apply(r[1]);
                int group = KeyGroupRangeAssignment.assignToKeyGroup(key, MAX_PARALLELISM);
                Task t = tasks.get(group < half ? 0 : 1);
                t.backend.setCurrentKey(key);
                Object ns = side.namespace.apply(r[2]);
                switch ((int) r[0]) {
                    case PUT:
                        t.state.setCurrentNamespace(ns);
                        if (t.state.value() == null) {
                            entries++;
                        }
                        t.state.update(side.value.apply(r[3]));
                        break;
                    case CLEAR:
                        t.state.setCurrentNamespace(ns);
                        if (t.state.value() != null) {
                            entries--;
                        }
                        t.state.clear();
                        break;
                    case ADD_TIMER:
                        // the history holds only registrations of timers not yet there
                        t.queues.get(0).add(new TimerHeapInternalTimer<>(r[2] - 1, key, ns));
                        timers++;
                        break;
                    case DELETE_TIMER: // a fired timer, polled from the queue
                        t.queues.get(0).remove(new TimerHeapInternalTimer<>(r[2] - 1, key, ns));
                        timers--;
                        break;
                    default:
                        throw new IllegalArgumentException("no history op " + r[0]);
                }
            }
        } finally {
            for (Task t : tasks) {
                t.backend.dispose();
            }
            registry.close();
        }
        return out;
    }
}
