package statebench.flink.sql;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.BasicTypeInfo;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.typeutils.ListTypeInfo;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.api.java.typeutils.TupleTypeInfo;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.AbstractKeyedStateBackend;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.TimerSerializer;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.RowType;

import java.io.File;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongFunction;
import java.util.function.ToLongFunction;

/**
 * The interval join's state in a full keyed checkpoint, in the real SQL operator's format and
 * in the statebench lane's, replayed through the join's own logic into Flink's keyed backends
 * (tests/flink/test_checkpoint_interval_join.py).
 *
 * <p>Why: on HashMap the real SQL job's interval join checkpoints are about 1.4x the emulated
 * operator's. The cause named is the row format: {@code TimeIntervalJoin} caches each row as
 * a {@code Tuple2<RowData, Boolean>} in a {@code List} per row time, under a BinaryRowData
 * key; the lane ({@code Operators.IntervalJoin}) packs 32 (bid) or 44 (auction) bytes and a
 * flag per row into one byte[] under a long key. Unlike a ValueState kind, which rows a
 * checkpoint holds depends on the join's history (rows cached, rows removed when the
 * watermark passes their bound, cleanup timers registered and fired), so this program runs
 * that history: {@code TimeIntervalJoin}'s logic (as Operators.IntervalJoin mirrors it, one
 * instance per task with its own expiration times) over the run's events, each side's states
 * written in that side's format into two backends (the key groups' halves, parallelism 2),
 * the timers in the backend's own priority queue ({@code _timer_state/event_user-timers}, as
 * InternalTimerServiceImpl creates it), snapshotted at the side's checkpoint times. Each
 * snapshot comes with what the state holds (keys, rows, row times, timer states, timers), so
 * the test can account for every byte; the measured gap is mostly the key (a 20-byte
 * BinaryRowData against a long in every cache header, timer state and timer), less the rows
 * (a bid's 53 bytes against 33; an auction's four fields cost the lane's 44 bytes).
 *
 * <p>SQL's format is read from the plan SqlJob runs: the keyed operator's key type and its
 * {@code RowTimeIntervalJoin}'s leftType / rightType, relative sizes, cleanup interval and
 * lateness, the states built as {@code TimeIntervalJoin.open} builds them.
 *
 * <p>Usage: {@code java -cp ... statebench.flink.sql.IntervalJoinProbe REQUEST.json}; the
 * request holds {@code dir} (RocksDB's folders), {@code job} (SqlJob's job object),
 * {@code events} (the operator's input in the job's order: rows of 7 big-endian longs, event
 * type, ts, person, auction, price, category, expires) and {@code times}
 * ({@code {side: {backend: [ms, ...]}}}; a backend without times is not replayed). Prints
 * one JSON object: per backend and side, the serializers and bytes ({@link #describe}) and
 * the replay ({@link #replay}).
 */
public final class IntervalJoinProbe {
    static final int MAX_PARALLELISM = 128;
    static final long BID = 2;
    /** Operators.IntervalJoin.BEFORE_ANY_ROW: the lane's times start at 0, below every row
     *  as Flink's 0 below the SQL job's shifted times. */
    static final long BEFORE_ANY_ROW = -(1L << 62);

    private IntervalJoinProbe() {
    }

    /** One side's states and how it writes a key and a cache entry. */
    static final class Format {
        String name;
        TypeSerializer<Object> keySerializer;
        MapStateDescriptor<Long, Object> leftCache;
        MapStateDescriptor<Long, Object> rightCache;
        ValueStateDescriptor<Long> leftTimer;
        ValueStateDescriptor<Long> rightTimer;
        LongFunction<Object> key;
        ToLongFunction<Object> auction;
        /** The rows of one row time (bids: left) as the cache's value. */
        java.util.function.BiFunction<List<long[]>, Boolean, Object> value;
        long leftSize;
        long rightSize;
        long minCleanup;
        long lateness;
        /** The watermark every task reads: the job's (true: SQL, one source for every task)
         *  or the task's own rows' (the lane's Op.advance). */
        boolean globalWatermark;
        /** The cached rows' fields (bids, auctions): SQL's leftType / rightType, the lane's
         *  packed columns. */
        List<String> leftFields;
        List<String> rightFields;
    }

    public static void main(String[] argv) throws Exception {
        JsonNode request = SqlJob.JSON.readTree(new File(argv[0]));
        File dir = new File(request.path("dir").asText());
        SqlJob.Job job = SqlJob.Job.of(request.path("job"));
        long[][] events = RowFormatProbe.readData(new File(request.path("events").asText()), 7);
        ObjectNode out = SqlJob.JSON.createObjectNode();
        ArrayNode rows = out.putArray("rows");
        Format sql = sqlFormat(job);
        Format lane = laneFormat(job);
        for (String backend : new String[] {"hashmap", "rocksdb"}) {
            for (Format f : new Format[] {sql, lane}) {
                String side = f == sql ? "sql" : "lane";
                JsonNode times = request.path("times").path(side).path(backend);
                if (!times.isArray()) {
                    continue;
                }
                ObjectNode row = rows.addObject();
                row.put("backend", backend);
                row.put("side", side);
                describe(f, events, row);
                row.set("replay", replay(f, backend, events, job.outOfOrdernessMs, times,
                        new File(dir, side + "-" + backend)));
            }
        }
        System.out.println(SqlJob.JSON.writeValueAsString(out));
        System.exit(0);
    }

    // --------------------------------------------------------------------------------------
    // The two formats
    // --------------------------------------------------------------------------------------

    /** SQL's states, from the plan: TimeIntervalJoin.open's descriptors over the function's
     *  leftType / rightType (no TTL: open enables none), the operator's BinaryRowData key. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static Format sqlFormat(SqlJob.Job j) throws Exception {
        StreamNode node = RowFormatProbe.keyedNode(j);
        Object function = RowFormatProbe.userFunction(node);
        InternalTypeInfo<RowData> keyType = (InternalTypeInfo<RowData>)
                ((ResultTypeQueryable<?>) node.getStatePartitioners()[0]).getProducedType();
        InternalTypeInfo<RowData> leftType = (InternalTypeInfo<RowData>)
                RowFormatProbe.field(function, "leftType");
        InternalTypeInfo<RowData> rightType = (InternalTypeInfo<RowData>)
                RowFormatProbe.field(function, "rightType");
        Format f = new Format();
        f.name = function.getClass().getSimpleName() + " " + leftType.toRowType().asSummaryString()
                + " / " + rightType.toRowType().asSummaryString() + ", key "
                + keyType.toRowType().asSummaryString();
        f.keySerializer = (TypeSerializer<Object>) node.getStateKeySerializer();
        f.leftCache = new MapStateDescriptor("IntervalJoinLeftCache",
                BasicTypeInfo.LONG_TYPE_INFO, new ListTypeInfo<>(
                        new TupleTypeInfo<>(leftType, BasicTypeInfo.BOOLEAN_TYPE_INFO)));
        f.rightCache = new MapStateDescriptor("IntervalJoinRightCache",
                BasicTypeInfo.LONG_TYPE_INFO, new ListTypeInfo<>(
                        new TupleTypeInfo<>(rightType, BasicTypeInfo.BOOLEAN_TYPE_INFO)));
        f.leftTimer = new ValueStateDescriptor<>("IntervalJoinLeftTimerState", Long.class);
        f.rightTimer = new ValueStateDescriptor<>("IntervalJoinRightTimerState", Long.class);
        RowDataSerializer keyRows = keyType.toRowSerializer();
        RowType keyRow = keyType.toRowType();
        f.key = a -> keyRows.toBinaryRow(RowFormatProbe.named(keyRow,
                Map.of(keyRow.getFieldNames().get(0), a))).copy();
        f.auction = k -> ((RowData) k).getLong(0);
        RowDataSerializer[] ser = {leftType.toRowSerializer(), rightType.toRowSerializer()};
        RowType[] types = {leftType.toRowType(), rightType.toRowType()};
        long shift = j.shiftMs;
        f.value = (rows, left) -> {
            int s = left ? 0 : 1;
            List<Tuple2<RowData, Boolean>> list = new ArrayList<>(rows.size());
            for (long[] r : rows) {
                list.add(Tuple2.of(ser[s].toBinaryRow(RowFormatProbe.named(types[s],
                        sqlValues(r, shift))).copy(), false));
            }
            return list;
        };
        f.leftSize = (Long) RowFormatProbe.field(function, "leftRelativeSize");
        f.rightSize = (Long) RowFormatProbe.field(function, "rightRelativeSize");
        f.minCleanup = (Long) RowFormatProbe.field(function, "minCleanUpInterval");
        f.lateness = (Long) RowFormatProbe.field(function, "allowedLateness");
        f.globalWatermark = true;
        f.leftFields = types[0].getFieldNames();
        f.rightFields = types[1].getFieldNames();
        return f;
    }

    /** One input row's values by the SQL views' column names (bid: auction, bidder, price,
     *  ts, event_time; auction: id, seller, category, initial_bid, expires_ms, ts,
     *  event_time), whichever of them the planner keeps in the join's input rows. */
    static Map<String, Long> sqlValues(long[] r, long shift) {
        Map<String, Long> v = new HashMap<>();
        v.put("auction", r[3]);
        v.put("id", r[3]);
        v.put("bidder", r[2]);
        v.put("seller", r[2]);
        v.put("price", r[4]);
        v.put("initial_bid", r[4]);
        v.put("category", r[5]);
        v.put("expires_ms", r[6]);
        v.put("ts", r[1]);
        v.put("event_time", r[1] + shift);
        return v;
    }

    /** The lane's states as Operators.IntervalJoin registers them: MapState<Long, byte[]>
     *  caches (32 / 44 bytes and a flag per row), ValueState<Long> timer states, long key. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static Format laneFormat(SqlJob.Job j) {
        Format f = new Format();
        f.name = "Operators.IntervalJoin";
        f.keySerializer = (TypeSerializer) LongSerializer.INSTANCE;
        f.leftCache = new MapStateDescriptor("IntervalJoinLeftCache", LongSerializer.INSTANCE,
                BytePrimitiveArraySerializer.INSTANCE);
        f.rightCache = new MapStateDescriptor("IntervalJoinRightCache", LongSerializer.INSTANCE,
                BytePrimitiveArraySerializer.INSTANCE);
        f.leftTimer = new ValueStateDescriptor<>("IntervalJoinLeftTimerState",
                LongSerializer.INSTANCE);
        f.rightTimer = new ValueStateDescriptor<>("IntervalJoinRightTimerState",
                LongSerializer.INSTANCE);
        f.key = a -> (Object) a;
        f.auction = k -> (Long) k;
        f.value = (rows, left) -> {
            int size = left ? 32 : 44;
            ByteBuffer b = ByteBuffer.allocate(rows.size() * (size + 1));
            for (long[] r : rows) {
                b.putLong(r[3]).putLong(r[2]).putLong(r[4]);
                if (!left) {
                    b.putInt((int) r[5]).putLong(r[6]);
                }
                b.putLong(r[1]).put((byte) 0);
            }
            return b.array();
        };
        f.leftSize = -j.lowerMs;
        f.rightSize = j.upperMs;
        f.minCleanup = 0;
        f.lateness = 0;
        f.globalWatermark = false;
        f.leftFields = List.of("auction", "bidder", "price", "ts");
        f.rightFields = List.of("auction", "seller", "initial_bid", "category:int", "expires",
                "ts");
        return f;
    }

    /** The serializers and one entry's bytes: the key, a one-bid and a one-auction cache
     *  value (the map key, a Long, is 8 more), a timer state's value. */
    @SuppressWarnings("unchecked")
    static void describe(Format f, long[][] events, ObjectNode row) throws Exception {
        row.put("state", f.name);
        row.put("key_serializer", f.keySerializer.getClass().getSimpleName());
        DataOutputSerializer buf = new DataOutputSerializer(64);
        f.keySerializer.serialize(f.key.apply(events[0][3]), buf);
        row.put("key_bytes", buf.length());
        row.put("left_size", f.leftSize);
        row.put("right_size", f.rightSize);
        row.put("min_cleanup", f.minCleanup);
        row.put("lateness", f.lateness);
        ArrayNode leftFields = row.putArray("left_fields");
        f.leftFields.forEach(leftFields::add);
        ArrayNode rightFields = row.putArray("right_fields");
        f.rightFields.forEach(rightFields::add);
        for (boolean left : new boolean[] {true, false}) {
            MapStateDescriptor<Long, Object> d = left ? f.leftCache : f.rightCache;
            d.initializeSerializerUnlessSet(new ExecutionConfig());
            long[] first = null;
            for (long[] e : events) {
                if ((e[0] == BID) == left) {
                    first = e;
                    break;
                }
            }
            buf.clear();
            d.getValueSerializer().serialize(f.value.apply(List.of(first), left), buf);
            row.put(left ? "bid_value_bytes" : "auction_value_bytes", buf.length());
            row.put(left ? "left_value_serializer" : "right_value_serializer",
                    d.getValueSerializer().getClass().getSimpleName());
            row.put(left ? "left_ttl" : "right_ttl", d.getTtlConfig().isEnabled());
        }
        f.leftTimer.initializeSerializerUnlessSet(new ExecutionConfig());
        buf.clear();
        f.leftTimer.getSerializer().serialize(1L, buf);
        row.put("timer_value_bytes", buf.length());
    }

    // --------------------------------------------------------------------------------------
    // The join's history: TimeIntervalJoin's logic, one instance per task
    // --------------------------------------------------------------------------------------

    /** One key's state as the join keeps it: the logic reads this copy (in neither side's
     *  format) and writes every change to the backend in the side's format. */
    static final class Keyed {
        final TreeMap<Long, List<long[]>> left = new TreeMap<>();
        final TreeMap<Long, List<long[]>> right = new TreeMap<>();
        Long leftTimer;
        Long rightTimer;

        boolean empty() {
            return left.isEmpty() && right.isEmpty() && leftTimer == null && rightTimer == null;
        }
    }

    /** One task of the join: its key groups' backend, states and timers, its expiration
     *  times (operator fields shared by its keys, as in Flink) and watermark. */
    static final class Task {
        final Format f;
        final AbstractKeyedStateBackend<Object> backend;
        final MapState<Long, Object> leftCache;
        final MapState<Long, Object> rightCache;
        final ValueState<Long> leftTimerState;
        final ValueState<Long> rightTimerState;
        final KeyGroupedInternalPriorityQueue<TimerHeapInternalTimer<Object, Object>> timers;
        final Map<Long, Keyed> keys = new HashMap<>();
        long leftExpiration = BEFORE_ANY_ROW;
        long rightExpiration = BEFORE_ANY_ROW;
        long watermark = Long.MIN_VALUE;
        Object currentKey;
        Keyed current;

        @SuppressWarnings({"unchecked", "rawtypes"})
        Task(Format f, AbstractKeyedStateBackend<Object> backend) throws Exception {
            this.f = f;
            this.backend = backend;
            leftCache = (MapState<Long, Object>) state(f.leftCache);
            rightCache = (MapState<Long, Object>) state(f.rightCache);
            leftTimerState = (ValueState<Long>) state(f.leftTimer);
            rightTimerState = (ValueState<Long>) state(f.rightTimer);
            // InternalTimerServiceImpl's event-time queue of KeyedCoProcessOperator's
            // "user-timers" service
            timers = (KeyGroupedInternalPriorityQueue) backend.create(
                    "_timer_state/event_user-timers",
                    new TimerSerializer<>(backend.getKeySerializer(),
                            VoidNamespaceSerializer.INSTANCE));
        }

        @SuppressWarnings({"unchecked", "rawtypes"})
        Object state(StateDescriptor<?, ?> d) throws Exception {
            return backend.getPartitionedState(VoidNamespace.INSTANCE,
                    VoidNamespaceSerializer.INSTANCE, (StateDescriptor) d);
        }

        void setKey(Object key) {
            if (!key.equals(currentKey)) {
                currentKey = key;
                backend.setCurrentKey(key);
            }
            current = keys.computeIfAbsent(f.auction.applyAsLong(key), a -> new Keyed());
        }

        /** Before a record at ts: the bounded-out-of-orderness watermark, firing timers. */
        void advance(long ts, long bound) throws Exception {
            long wm = ts - bound - 1;
            if (wm > watermark) {
                advanceTo(wm);
            }
        }

        /** InternalTimerServiceImpl.advanceWatermark: fire every timer at or before wm. */
        void advanceTo(long wm) throws Exception {
            watermark = wm;
            TimerHeapInternalTimer<Object, Object> timer;
            while ((timer = timers.peek()) != null && timer.getTimestamp() <= wm) {
                timers.poll();
                setKey(timer.getKey());
                onTimer(timer.getTimestamp());
                forgetIfEmpty();
            }
        }

        long operatorTime() {
            return watermark > BEFORE_ANY_ROW ? watermark : BEFORE_ANY_ROW;
        }

        long expiration(long size) {
            long now = operatorTime();
            return now < Long.MAX_VALUE ? now - size - f.lateness - 1 : Long.MAX_VALUE;
        }

        /** processElement1 (a bid) / processElement2 (an auction), the state's part. */
        void process(long[] r) throws Exception {
            setKey(f.key.apply(r[3]));
            long t = r[1];
            boolean left = r[0] == BID;
            long otherSize = left ? f.rightSize : f.leftSize;
            long mySize = left ? f.leftSize : f.rightSize;
            long hi = t + mySize;
            if ((left ? rightExpiration : leftExpiration) < hi) {
                long expiration = expiration(otherSize);
                if (left) {
                    rightExpiration = expiration;
                } else {
                    leftExpiration = expiration;
                }
                // eager removal of the other cache's expired entries while joining
                TreeMap<Long, List<long[]>> other = left ? current.right : current.left;
                MapState<Long, Object> otherState = left ? rightCache : leftCache;
                while (!other.isEmpty() && other.firstKey() <= expiration) {
                    otherState.remove(other.pollFirstEntry().getKey());
                }
            }
            if (operatorTime() < hi) {
                TreeMap<Long, List<long[]>> mine = left ? current.left : current.right;
                List<long[]> rows = mine.computeIfAbsent(t, x -> new ArrayList<>(1));
                rows.add(r);
                (left ? leftCache : rightCache).put(t, f.value.apply(rows, left));
                if ((left ? current.rightTimer : current.leftTimer) == null) {
                    registerCleanup(t, left);
                }
            }
            forgetIfEmpty();
        }

        void registerCleanup(long rowTime, boolean left) throws Exception {
            long cleanup = rowTime + (left ? f.leftSize : f.rightSize) + f.minCleanup
                    + f.lateness + 1;
            timers.add(new TimerHeapInternalTimer<>(cleanup, currentKey, VoidNamespace.INSTANCE));
            if (left) {
                rightTimerState.update(cleanup);
                current.rightTimer = cleanup;
            } else {
                leftTimerState.update(cleanup);
                current.leftTimer = cleanup;
            }
        }

        void onTimer(long ts) throws Exception {
            if (current.leftTimer != null && ts == current.leftTimer) {
                rightExpiration = expiration(f.rightSize);
                removeExpired(rightExpiration, false);
            }
            if (current.rightTimer != null && ts == current.rightTimer) {
                leftExpiration = expiration(f.leftSize);
                removeExpired(leftExpiration, true);
            }
        }

        void removeExpired(long expiration, boolean left) throws Exception {
            TreeMap<Long, List<long[]>> cache = left ? current.left : current.right;
            MapState<Long, Object> state = left ? leftCache : rightCache;
            while (!cache.isEmpty() && cache.firstKey() <= expiration) {
                state.remove(cache.pollFirstEntry().getKey());
            }
            if (!cache.isEmpty()) {
                registerCleanup(cache.firstKey(), left);
            } else {
                if (left) {
                    rightTimerState.clear();
                    current.rightTimer = null;
                } else {
                    leftTimerState.clear();
                    current.leftTimer = null;
                }
                state.clear();
            }
        }

        void forgetIfEmpty() {
            if (current.empty()) {
                keys.remove(f.auction.applyAsLong(currentKey));
            }
        }
    }

    /**
     * The join's history over `events` in `f`'s format: two tasks (the key groups' halves),
     * both snapshotted whenever the input passes one of `times` (after the last event, the
     * final watermark first fires every timer, as the job's end does). Returns one object per
     * time: t, the bytes of both snapshots and what they hold ({@link #counts}).
     */
    static ArrayNode replay(Format f, String backend, long[][] events, long bound,
                            JsonNode times, File dir) throws Exception {
        int half = MAX_PARALLELISM / 2;
        KeyGroupRange[] ranges = {KeyGroupRange.of(0, half - 1),
            KeyGroupRange.of(half, MAX_PARALLELISM - 1)};
        RowFormatProbe.Side side = new RowFormatProbe.Side(f.name, f.keySerializer,
                List.of(), a -> null, (st, i) -> { });
        CloseableRegistry registry = new CloseableRegistry();
        List<Task> tasks = new ArrayList<>();
        ArrayNode out = SqlJob.JSON.createArrayNode();
        try {
            for (int t = 0; t < 2; t++) {
                tasks.add(new Task(f, RowFormatProbe.open(side, backend,
                        new File(dir, "task-" + t), registry, ranges[t])));
            }
            int next = 0;
            long id = 1;
            for (int i = 0; i <= events.length; i++) {
                long ts = i < events.length ? events[i][1] : Long.MAX_VALUE;
                if (i == events.length) {
                    // the end of input: the final watermark fires every timer (the
                    // checkpoints after it hold what is left: nothing)
                    for (Task task : tasks) {
                        task.advanceTo(Long.MAX_VALUE);
                    }
                }
                while (next < times.size() && ts > times.get(next).asLong()) {
                    ObjectNode point = out.addObject();
                    point.put("t", times.get(next).asLong());
                    long bytes = 0;
                    for (Task task : tasks) {
                        bytes += RowFormatProbe.snapshot(task.backend, id);
                    }
                    id++;
                    point.put("bytes", bytes);
                    counts(tasks, point);
                    next++;
                }
                if (i == events.length) {
                    break;
                }
                Object key = f.key.apply(events[i][3]);
                int group = KeyGroupRangeAssignment.assignToKeyGroup(key, MAX_PARALLELISM);
                Task mine = tasks.get(group < half ? 0 : 1);
                for (Task task : tasks) {
                    if (task == mine || f.globalWatermark) {
                        task.advance(ts, bound);
                    }
                }
                mine.process(events[i]);
            }
        } finally {
            for (Task task : tasks) {
                task.backend.dispose();
            }
            registry.close();
        }
        return out;
    }

    /** What both tasks hold: keys with state, cached bids and auctions, cache entries (row
     *  times), keys with a left / right cache and with a left / right timer state, timers. */
    static void counts(List<Task> tasks, ObjectNode point) {
        long[] c = new long[10];
        for (Task task : tasks) {
            c[0] += task.keys.size();
            c[9] += task.timers.size();
            for (Keyed k : task.keys.values()) {
                for (List<long[]> rows : k.left.values()) {
                    c[1] += rows.size();
                }
                for (List<long[]> rows : k.right.values()) {
                    c[2] += rows.size();
                }
                c[3] += k.left.size();
                c[4] += k.right.size();
                c[5] += k.left.isEmpty() ? 0 : 1;
                c[6] += k.right.isEmpty() ? 0 : 1;
                c[7] += k.leftTimer == null ? 0 : 1;
                c[8] += k.rightTimer == null ? 0 : 1;
            }
        }
        String[] names = {"keys", "bids", "auctions", "left_entries", "right_entries",
            "left_keys", "right_keys", "left_timer_states", "right_timer_states", "timers"};
        for (int i = 0; i < names.length; i++) {
            point.put(names[i], c[i]);
        }
    }
}
