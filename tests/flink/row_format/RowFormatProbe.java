package statebench.flink.sql;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.state.AbstractKeyedStateBackend;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.LocalRecoveryConfig;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.UncompressedStreamCompressionDecorator;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.heap.HeapKeyedStateBackendBuilder;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSetFactory;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.runtime.state.metrics.LatencyTrackingStateConfig;
import org.apache.flink.runtime.state.metrics.SizeTrackingStateConfig;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend;
import org.apache.flink.state.rocksdb.PredefinedOptions;
import org.apache.flink.state.rocksdb.RocksDBKeyedStateBackendBuilder;
import org.apache.flink.state.rocksdb.RocksDBPriorityQueueConfig;
import org.apache.flink.state.rocksdb.RocksDBResourceContainer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.AbstractUdfStreamOperator;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.runtime.util.StateConfigUtil;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.Row;

import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RunnableFuture;
import java.util.function.LongFunction;

/**
 * What one key's state costs in a full keyed checkpoint, on the real SQL operator's serializers
 * and on the statebench lane's, in Flink's own HashMap and RocksDB keyed backends
 * (tests/flink/test_checkpoint_row_format.py).
 *
 * <p>Why: the real SQL job's checkpoints are larger than the emulated operator's on
 * flink-heap / flink-rocksdb; the cause named is the row format (SQL keeps BinaryRowData keys
 * and rows, the lane a long key and a packed value). This program measures that format rather
 * than assume it: it plans the kind's query exactly as {@link SqlJob} does (its DDL, views and
 * query), takes the keyed operator of the plan (its key selector's type, and the state type
 * its function registers: {@code RowTimeDeduplicateFunction}'s input row for
 * {@code deduplicate-state}, {@code GroupAggFunction}'s accumulator row for {@code accState}),
 * and writes the given entries, with the TTL as the operator enables it, into a fresh keyed
 * backend of each kind, then takes Flink's full checkpoint of it (HashMap: the serialized
 * entries; RocksDB: its native full snapshot, the DB's SST files). The same for the lane's
 * state as {@code Operators.java} registers it (long key; {@code byte[32]} / {@code Long}
 * value). Two snapshots (half the entries, all) give the bytes per entry and the fixed part.
 * With {@code times}, it also replays the state's history (each input row's write) into two
 * backends holding the key groups' halves and snapshots them at those times.
 *
 * <p>Usage: {@code java -cp <this:sql job classes:pyflink/lib/*> statebench.flink.sql
 * .RowFormatProbe REQUEST.json}; the request holds {@code dir} (RocksDB's folders) and
 * {@code jobs}: SqlJob's job objects, one per kind (their events file need only exist), each
 * with {@code data} / {@code columns} (the entries: big-endian longs, {@link #columns}),
 * optionally {@code replay} / {@code replay_columns} (per input row its new state value, then
 * its ts) and {@code times} ({@code {side: {backend: [ms, ...]}}}). The MapState kinds
 * (regular_join: StreamingJoinOperator's record states; topn: AppendOnlyTopNFunction's
 * data-state-with-append) give only {@code replay} ({@link #mapColumns}) and {@code times}, and
 * are replayed on HashMap only ({@link #mapRows}). Prints one JSON object.
 */
public final class RowFormatProbe {
    private static final int MAX_PARALLELISM = 128;

    private RowFormatProbe() {
    }

    /** One state as one side keeps it: its descriptor and how to make the i-th key and value. */
    static final class Side {
        final String name;
        final TypeSerializer<Object> keySerializer;
        final ValueStateDescriptor<Object> descriptor;
        final LongFunction<Object> key;
        final LongFunction<Object> value;

        /** Every state the side registers (a ValueState side: its descriptor). */
        final List<StateDescriptor<?, ?>> states;
        /** Writes the i-th row's state into the side's states (a ValueState side: update). */
        final Writer writer;

        @SuppressWarnings("unchecked")
        Side(String name, TypeSerializer<?> keySerializer, ValueStateDescriptor<?> descriptor,
             LongFunction<Object> key, LongFunction<Object> value) {
            this.name = name;
            this.keySerializer = (TypeSerializer<Object>) keySerializer;
            this.descriptor = (ValueStateDescriptor<Object>) descriptor;
            this.key = key;
            this.value = value;
            this.states = List.of(descriptor);
            this.writer = (states, i) -> ((ValueState<Object>) states.get(0)).update(value.apply(i));
        }

        /** A side of MapStates (regular_join, topn): `writer` puts or removes the i-th row's
         *  entry. */
        @SuppressWarnings("unchecked")
        Side(String name, TypeSerializer<?> keySerializer, List<StateDescriptor<?, ?>> states,
             LongFunction<Object> key, Writer writer) {
            this.name = name;
            this.keySerializer = (TypeSerializer<Object>) keySerializer;
            this.descriptor = null;
            this.key = key;
            this.value = null;
            this.states = states;
            this.writer = writer;
        }
    }

    /** How one replayed row changes a side's states (the current key already set). */
    interface Writer {
        void write(List<State> states, int i) throws Exception;
    }

    /** The kinds whose state is MapStates, replayed on HashMap only (their rows in the
     *  replay file: {@link #mapColumns}). */
    static boolean mapKind(String kind) {
        return kind.equals("regular_join") || kind.equals("topn");
    }

    public static void main(String[] argv) throws Exception {
        JsonNode request = SqlJob.JSON.readTree(new File(argv[0]));
        File dir = new File(request.path("dir").asText());
        ObjectNode out = SqlJob.JSON.createObjectNode();
        ArrayNode rows = out.putArray("rows");
        for (JsonNode jobNode : request.path("jobs")) {
            SqlJob.Job job = SqlJob.Job.of(jobNode);
            if (mapKind(job.kind)) {
                mapRows(job, jobNode, rows, new File(dir, "replay"));
                continue;
            }
            long[][] data = readData(new File(jobNode.path("data").asText()),
                    jobNode.path("columns").asInt());
            Side sql = sqlSide(job, data);
            Side lane = laneSide(job, data);
            long n = data.length / 2;
            long all = data.length;
            for (String backend : new String[] {"hashmap", "rocksdb"}) {
                for (Side side : new Side[] {sql, lane}) {
                    ObjectNode row = rows.addObject();
                    row.put("kind", job.kind);
                    row.put("backend", backend);
                    row.put("side", side == sql ? "sql" : "lane");
                    row.put("state", side.descriptor.getName());
                    describe(side, row);
                    long one = snapshotBytes(side, backend, n, new File(dir, "one"));
                    long two = snapshotBytes(side, backend, all, new File(dir, "two"));
                    double perEntry = (two - one) / (double) (all - n);
                    row.put("entries", all);
                    row.put("bytes_half", one);
                    row.put("bytes_all", two);
                    row.put("bytes_per_entry", perEntry);
                    row.put("fixed_bytes", two - all * perEntry);
                    JsonNode times = jobNode.path("times").path(row.get("side").asText())
                            .path(backend);
                    if (times.isArray()) {
                        row.set("replay", replay(job, side == sql, backend, jobNode, times,
                                new File(dir, "replay")));
                    }
                }
            }
        }
        System.out.println(SqlJob.JSON.writeValueAsString(out));
        System.exit(0);
    }

    /** The serializers' classes and the bytes of one key and one value as each writes them. */
    static void describe(Side side, ObjectNode row) throws Exception {
        row.put("key_serializer", side.keySerializer.getClass().getSimpleName());
        side.descriptor.initializeSerializerUnlessSet(new ExecutionConfig());
        // the user value's serializer: the TTL's TtlSerializer wraps it in the backend
        TypeSerializer<Object> values = side.descriptor.getSerializer();
        row.put("value_serializer", values.getClass().getSimpleName());
        DataOutputSerializer buf = new DataOutputSerializer(64);
        side.keySerializer.serialize(side.key.apply(0), buf);
        row.put("key_bytes", buf.length());
        buf.clear();
        values.serialize(side.value.apply(0), buf);
        row.put("value_bytes", buf.length());
        row.put("ttl", side.descriptor.getTtlConfig().isEnabled());
    }

    // --------------------------------------------------------------------------------------
    // The real operator's state, from the plan SqlJob runs
    // --------------------------------------------------------------------------------------

    /** Plans the job's query as SqlJob.run does and returns the keyed operator's node. */
    static StreamNode keyedNode(SqlJob.Job j) throws Exception {
        Configuration conf = SqlJob.jobConfiguration(j);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env,
                EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
        tEnv.createTemporarySystemFunction("PACE", new SqlJob.Pace());
        tEnv.createTemporarySystemFunction("EPOCH_MS", new SqlJob.EpochMs());
        tEnv.executeSql(SqlJob.sourceDdl(j));
        for (String view : SqlJob.VIEWS) {
            tEnv.executeSql(view);
        }
        DataStream<Row> changes = tEnv.toChangelogStream(tEnv.sqlQuery(SqlJob.query(j)));
        changes.sinkTo(new DiscardingSink<>());
        StreamGraph graph = env.getStreamGraph();
        StreamNode keyed = null;
        for (StreamNode node : graph.getStreamNodes()) {
            if (node.getStateKeySerializer() != null) {
                if (keyed != null) {
                    throw new IllegalStateException("more than one keyed operator in the plan");
                }
                keyed = node;
            }
        }
        if (keyed == null) {
            throw new IllegalStateException("no keyed operator in the plan of " + j.kind);
        }
        return keyed;
    }

    /** The function of the keyed operator (a KeyedProcessOperator's user function). */
    static Object userFunction(StreamNode node) {
        StreamOperatorFactory<?> factory = node.getOperatorFactory();
        if (!(factory instanceof SimpleOperatorFactory)) {
            throw new IllegalStateException("unexpected operator factory " + factory);
        }
        Object op = ((SimpleOperatorFactory<?>) factory).getOperator();
        return ((AbstractUdfStreamOperator<?, ?>) op).getUserFunction();
    }

    /** A field of `target` declared in its class or a superclass. */
    static Object field(Object target, String name) throws Exception {
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(target);
            } catch (NoSuchFieldException e) {
                // a superclass may declare it
            }
        }
        throw new NoSuchFieldException(name + " in " + target.getClass());
    }

    @SuppressWarnings("unchecked")
    static Side sqlSide(SqlJob.Job j, long[][] data) throws Exception {
        StreamNode node = keyedNode(j);
        KeySelector<?, ?>[] selectors = node.getStatePartitioners();
        InternalTypeInfo<RowData> keyType = (InternalTypeInfo<RowData>)
                ((org.apache.flink.api.java.typeutils.ResultTypeQueryable<?>) selectors[0])
                        .getProducedType();
        Object function = userFunction(node);
        String name = function.getClass().getSimpleName();
        InternalTypeInfo<RowData> valueType;
        String stateName;
        switch (j.kind) {
            case "dedup": // SyncStateDeduplicateFunctionBase.open: ("deduplicate-state", typeInfo)
                valueType = (InternalTypeInfo<RowData>) field(function, "typeInfo");
                stateName = "deduplicate-state";
                break;
            case "group_agg": // GroupAggFunction.open: ("accState", InternalTypeInfo.ofFields(accTypes))
                valueType = InternalTypeInfo.ofFields((LogicalType[]) field(function, "accTypes"));
                stateName = "accState";
                break;
            default:
                throw new IllegalArgumentException("no row format probe for kind " + j.kind);
        }
        ValueStateDescriptor<RowData> desc = new ValueStateDescriptor<>(stateName,
                (TypeInformation<RowData>) valueType);
        StateTtlConfig ttl = StateConfigUtil.createTtlConfig(j.ttlMs);
        if (ttl.isEnabled()) {
            desc.enableTimeToLive(ttl);
        }
        RowDataSerializer keyRows = keyType.toRowSerializer();
        RowDataSerializer valueRows = valueType.toRowSerializer();
        RowType keyRow = keyType.toRowType();
        RowType valueRow = valueType.toRowType();
        // the key rows' fields are positional (f0, ...): the PARTITION BY / GROUP BY columns;
        // the accumulator's too: MAX(price), MAX(ts)
        String[] keyOrder = j.kind.equals("dedup") ? new String[] {"bidder", "auction"}
                : new String[] {"auction"};
        String[] accOrder = {"price", "ts"};
        Side side = new Side(name + " " + valueRow.asSummaryString(),
                node.getStateKeySerializer(), desc,
                i -> keyRows.toBinaryRow(filled(keyRow, data[(int) i], j.kind, keyOrder)).copy(),
                i -> valueRows.toBinaryRow(filled(valueRow, data[(int) i], j.kind, accOrder))
                        .copy());
        return side;
    }

    /** The columns of each kind's entries (one row per key, as its state holds it at the end
     *  of the input): dedup's last bid per (bidder, auction), group_agg's maxima per auction. */
    static String[] columns(String kind) {
        switch (kind) {
            case "dedup":
                return new String[] {"auction", "bidder", "price", "ts"};
            case "group_agg":
                return new String[] {"auction", "price", "ts"};
            default:
                throw new IllegalArgumentException("no row format probe for kind " + kind);
        }
    }

    /** The value of one field of a SQL row: by its name (the source's columns: person_id is
     *  the bidder, auction_id the auction, event_time the bid's time), else by its position
     *  in `order` (a key row's or accumulator's f0, f1, ...). */
    static long column(RowType type, int f, long[] entry, String kind, String[] order) {
        String name = type.getFieldNames().get(f);
        switch (name) {
            case "person_id":
                name = "bidder";
                break;
            case "auction_id":
                name = "auction";
                break;
            case "event_time":
                name = "ts";
                break;
            default:
                break;
        }
        List<String> names = java.util.Arrays.asList(columns(kind));
        int at = names.indexOf(name);
        if (at < 0) {
            if (!name.equals("f" + f)) {
                throw new IllegalArgumentException("no column for field " + name + " of " + type);
            }
            at = names.indexOf(order[f]);
        }
        return entry[at];
    }

    /** A row of `type` holding one entry's values (the operator's rows hold no nulls here). */
    static RowData filled(RowType type, long[] entry, String kind, String[] order) {
        return row(type, f -> column(type, f, entry, kind, order));
    }

    /** A row of `type`, field f holding {@code value.applyAsLong(f)} in the field's type. */
    static RowData row(RowType type, java.util.function.IntToLongFunction value) {
        GenericRowData row = new GenericRowData(type.getFieldCount());
        for (int f = 0; f < type.getFieldCount(); f++) {
            long v = value.applyAsLong(f);
            LogicalType t = type.getTypeAt(f);
            switch (t.getTypeRoot()) {
                case BIGINT:
                    row.setField(f, v);
                    break;
                case INTEGER:
                    row.setField(f, (int) v);
                    break;
                case TINYINT:
                    row.setField(f, (byte) v);
                    break;
                case TIMESTAMP_WITHOUT_TIME_ZONE:
                case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                    row.setField(f, TimestampData.fromEpochMillis(v));
                    break;
                default:
                    throw new IllegalArgumentException("no filler for " + t + " in " + type);
            }
        }
        return row;
    }

    /** Rows of `columns` big-endian longs. */
    static long[][] readData(File file, int columns) throws java.io.IOException {
        ByteBuffer bytes = ByteBuffer.wrap(java.nio.file.Files.readAllBytes(file.toPath()));
        long[][] rows = new long[bytes.remaining() / 8 / columns][columns];
        for (long[] row : rows) {
            for (int c = 0; c < columns; c++) {
                row[c] = bytes.getLong();
            }
        }
        return rows;
    }

    // --------------------------------------------------------------------------------------
    // The lane's state, as Operators.java registers it
    // --------------------------------------------------------------------------------------

    static Side laneSide(SqlJob.Job j, long[][] data) {
        StateTtlConfig ttl = j.ttlMs > 0
                ? StateTtlConfig.newBuilder(Duration.ofMillis(j.ttlMs)).build() : null;
        ValueStateDescriptor<?> desc;
        LongFunction<Object> value;
        LongFunction<Object> key;
        switch (j.kind) {
            case "dedup": // Operators.Dedup: ValueState<byte[]> of the 32-byte bid row
                desc = new ValueStateDescriptor<>("deduplicate-state",
                        BytePrimitiveArraySerializer.INSTANCE);
                value = i -> ByteBuffer.allocate(32).putLong(data[(int) i][0])
                        .putLong(data[(int) i][1]).putLong(data[(int) i][2])
                        .putLong(data[(int) i][3]).array();
                key = i -> (Object) ((data[(int) i][1] << 32) + data[(int) i][0]);
                break;
            case "group_agg": // Operators.GroupAgg: ValueState<Long>
                desc = new ValueStateDescriptor<>("accState", LongSerializer.INSTANCE);
                value = i -> (Object) data[(int) i][1];
                key = i -> (Object) data[(int) i][0];
                break;
            default:
                throw new IllegalArgumentException("no row format probe for kind " + j.kind);
        }
        if (ttl != null) {
            desc.enableTimeToLive(ttl);
        }
        return new Side("Operators.java", LongSerializer.INSTANCE, desc, key, value);
    }

    // --------------------------------------------------------------------------------------
    // The MapState kinds: regular_join (StreamingJoinOperator) and topn (AppendOnlyTopNFunction)
    // --------------------------------------------------------------------------------------

    /** The replay file's columns of a MapState kind: regular_join's row per input record
     *  (join key, 0 bid / 1 auction, the record's fields, ts); topn's row per state write
     *  (auction, price, the bids at that price after the write - 0: removed -, bidder, ts). */
    static int mapColumns(String kind) {
        return kind.equals("regular_join") ? 9 : 5;
    }

    /** The rows of a MapState kind: its serializers and one entry's bytes on each side, and
     *  its history replayed into HashMap backends at both sides' checkpoint times. */
    static void mapRows(SqlJob.Job job, JsonNode jobNode, ArrayNode rows, File dir)
            throws Exception {
        long[][] data = readData(new File(jobNode.path("replay").asText()),
                mapColumns(job.kind));
        Side sql = sqlMapSide(job, data);
        Side lane = laneMapSide(job, data);
        for (Side side : new Side[] {sql, lane}) {
            ObjectNode row = rows.addObject();
            String name = side == sql ? "sql" : "lane";
            row.put("kind", job.kind);
            row.put("backend", "hashmap");
            row.put("side", name);
            row.put("state", side.name);
            describeMap(side, data, row);
            JsonNode times = jobNode.path("times").path(name).path("hashmap");
            row.set("replay", replay(side, "hashmap", data, times, dir));
        }
    }

    /** The key's serializer and bytes, and per state its user key's and value's (the TTL's
     *  wrapper not included) as the side's serializers write the first row's entry. */
    @SuppressWarnings("unchecked")
    static void describeMap(Side side, long[][] data, ObjectNode row) throws Exception {
        row.put("key_serializer", side.keySerializer.getClass().getSimpleName());
        DataOutputSerializer buf = new DataOutputSerializer(64);
        side.keySerializer.serialize(side.key.apply(0), buf);
        row.put("key_bytes", buf.length());
        ArrayNode states = row.putArray("states");
        RecordingMap recorder = new RecordingMap();
        for (StateDescriptor<?, ?> d : side.states) {
            MapStateDescriptor<Object, Object> desc = (MapStateDescriptor<Object, Object>) d;
            desc.initializeSerializerUnlessSet(new ExecutionConfig());
            ObjectNode st = states.addObject();
            st.put("name", desc.getName());
            st.put("ttl", desc.getTtlConfig().isEnabled());
            st.put("user_key_serializer",
                    desc.getKeySerializer().getClass().getSimpleName());
            st.put("value_serializer", desc.getValueSerializer().getClass().getSimpleName());
        }
        // the first row's entry (a topn row holds one bid at its price)
        List<State> maps = new ArrayList<>();
        for (int k = 0; k < side.states.size(); k++) {
            maps.add(recorder);
        }
        side.writer.write(maps, 0);
        int k = (int) (side.states.size() > 1 ? data[0][1] : 0);
        MapStateDescriptor<Object, Object> desc =
                (MapStateDescriptor<Object, Object>) side.states.get(k);
        buf.clear();
        desc.getKeySerializer().serialize(recorder.key, buf);
        row.put("user_key_bytes", buf.length());
        buf.clear();
        desc.getValueSerializer().serialize(recorder.value, buf);
        row.put("value_bytes", buf.length());
        row.put("first_state", desc.getName());
    }

    /** A MapState that keeps the last put: what describeMap serializes. */
    static final class RecordingMap implements MapState<Object, Object> {
        Object key;
        Object value;

        @Override public Object get(Object k) {
            return null;
        }

        @Override public void put(Object k, Object v) {
            key = k;
            value = v;
        }

        @Override public void putAll(java.util.Map<Object, Object> map) {
        }

        @Override public void remove(Object k) {
        }

        @Override public boolean contains(Object k) {
            return false;
        }

        @Override public Iterable<java.util.Map.Entry<Object, Object>> entries() {
            return List.of();
        }

        @Override public Iterable<Object> keys() {
            return List.of();
        }

        @Override public Iterable<Object> values() {
            return List.of();
        }

        @Override public java.util.Iterator<java.util.Map.Entry<Object, Object>> iterator() {
            return java.util.Collections.emptyIterator();
        }

        @Override public boolean isEmpty() {
            return true;
        }

        @Override public void clear() {
        }
    }

    /** A row of `type` with the named fields' values (fields not named: 0; the rows here hold
     *  only fixed-length fields, whose bytes do not depend on the values). */
    static RowData named(RowType type, java.util.Map<String, Long> values) {
        return row(type, f -> values.getOrDefault(type.getFieldNames().get(f), 0L));
    }

    /** The keyed operator of the plan (a two-input join's: not a UDF operator). */
    static Object operator(StreamNode node) {
        StreamOperatorFactory<?> factory = node.getOperatorFactory();
        if (!(factory instanceof SimpleOperatorFactory)) {
            throw new IllegalStateException("unexpected operator factory " + factory);
        }
        return ((SimpleOperatorFactory<?>) factory).getOperator();
    }

    /** SQL's states, from the plan: StreamingJoinOperator's left-records / right-records
     *  (JoinRecordStateViews, no unique key on either side: MapState<record row, count>,
     *  TTL the retention time); AppendOnlyTopNFunction's data-state-with-append
     *  (MapState<sort key row, List<input row>>, its ttlConfig). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static Side sqlMapSide(SqlJob.Job j, long[][] data) throws Exception {
        StreamNode node = keyedNode(j);
        InternalTypeInfo<RowData> keyType = (InternalTypeInfo<RowData>)
                ((org.apache.flink.api.java.typeutils.ResultTypeQueryable<?>)
                        node.getStatePartitioners()[0]).getProducedType();
        RowDataSerializer keyRows = keyType.toRowSerializer();
        LongFunction<Object> key = i -> keyRows.toBinaryRow(
                named(keyType.toRowType(), java.util.Map.of(
                        keyType.toRowType().getFieldNames().get(0), data[(int) i][0]))).copy();
        if (j.kind.equals("regular_join")) {
            Object op = operator(node);
            InternalTypeInfo<RowData>[] types = new InternalTypeInfo[] {
                (InternalTypeInfo<RowData>) field(op, "leftType"),
                (InternalTypeInfo<RowData>) field(op, "rightType")};
            long[] retention = {(Long) field(op, "leftStateRetentionTime"),
                (Long) field(op, "rightStateRetentionTime")};
            for (String spec : new String[] {"leftInputSideSpec", "rightInputSideSpec"}) {
                Object s = field(op, spec);
                if ((Boolean) s.getClass().getMethod("hasUniqueKey").invoke(s)) {
                    throw new IllegalStateException("a unique key on the join's input: " + s);
                }
            }
            List<StateDescriptor<?, ?>> states = new ArrayList<>();
            String[] names = {"left-records", "right-records"};
            for (int k = 0; k < 2; k++) {
                MapStateDescriptor<RowData, Integer> d = new MapStateDescriptor<>(names[k],
                        types[k], org.apache.flink.api.common.typeinfo.Types.INT);
                StateTtlConfig ttl = StateConfigUtil.createTtlConfig(retention[k]);
                if (ttl.isEnabled()) {
                    d.enableTimeToLive(ttl);
                }
                states.add(d);
            }
            RowDataSerializer[] rowSer = {types[0].toRowSerializer(), types[1].toRowSerializer()};
            String[][] fields = {{"auction", "bidder", "price", "ts"},
                {"id", "seller", "category", "expires_ms", "ts", "initial_bid"}};
            Writer writer = (st, i) -> {
                long[] r = data[i];
                int k = (int) r[1];
                java.util.Map<String, Long> values = new java.util.HashMap<>();
                for (int f = 0; f < fields[k].length; f++) {
                    values.put(fields[k][f], r[2 + f]);
                }
                RowData record = rowSer[k].toBinaryRow(named(types[k].toRowType(), values))
                        .copy();
                ((MapState<Object, Object>) st.get(k)).put(record, 1);
            };
            return new Side("StreamingJoinOperator " + types[0].toRowType().asSummaryString()
                    + " / " + types[1].toRowType().asSummaryString(),
                    node.getStateKeySerializer(), states, key, writer);
        }
        Object function = userFunction(node);
        InternalTypeInfo<RowData> sortKeyType = (InternalTypeInfo<RowData>)
                field(function, "sortKeyType");
        InternalTypeInfo<RowData> inputType = (InternalTypeInfo<RowData>)
                field(function, "inputRowType");
        StateTtlConfig ttl = (StateTtlConfig) field(function, "ttlConfig");
        MapStateDescriptor<RowData, List<RowData>> d = new MapStateDescriptor<>(
                "data-state-with-append", sortKeyType,
                new org.apache.flink.api.java.typeutils.ListTypeInfo<>(inputType));
        if (ttl.isEnabled()) {
            d.enableTimeToLive(ttl);
        }
        RowDataSerializer sortRows = sortKeyType.toRowSerializer();
        RowDataSerializer inputRows = inputType.toRowSerializer();
        Writer writer = (st, i) -> {
            long[] r = data[i];
            RowData sortKey = sortRows.toBinaryRow(named(sortKeyType.toRowType(),
                    java.util.Map.of(sortKeyType.toRowType().getFieldNames().get(0), r[1])))
                    .copy();
            MapState<Object, Object> map = (MapState<Object, Object>) st.get(0);
            if (r[2] == 0) {
                map.remove(sortKey);
                return;
            }
            // the rank's input row is the source's (auction_id, person_id, price, ts)
            RowData bid = inputRows.toBinaryRow(named(inputType.toRowType(), java.util.Map.of(
                    "auction_id", r[0], "person_id", r[3], "price", r[1], "ts", r[4]))).copy();
            List<RowData> same = new ArrayList<>();
            for (long n = 0; n < r[2]; n++) {
                same.add(bid);
            }
            map.put(sortKey, same);
        };
        return new Side(function.getClass().getSimpleName() + " "
                + sortKeyType.toRowType().asSummaryString() + " -> "
                + inputType.toRowType().asSummaryString(), node.getStateKeySerializer(),
                List.of(d), key, writer);
    }

    /** The lane's states as Operators.java registers them: RegularJoin's left-records
     *  (MapState<Tuple4 of longs, Integer>) and right-records (Tuple6: long x3, int, long x2);
     *  TopN's data-state-with-append (MapState<Long price, byte[32 per bid]>); long keys. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static Side laneMapSide(SqlJob.Job j, long[][] data) {
        StateTtlConfig ttl = j.ttlMs > 0
                ? StateTtlConfig.newBuilder(Duration.ofMillis(j.ttlMs)).build() : null;
        TypeSerializer l = LongSerializer.INSTANCE;
        List<StateDescriptor<?, ?>> states = new ArrayList<>();
        Writer writer;
        if (j.kind.equals("regular_join")) {
            TypeSerializer in = org.apache.flink.api.common.typeutils.base.IntSerializer.INSTANCE;
            TypeSerializer bid = new org.apache.flink.api.java.typeutils.runtime.TupleSerializer(
                    org.apache.flink.api.java.tuple.Tuple4.class, new TypeSerializer[] {l, l, l, l});
            TypeSerializer auction =
                    new org.apache.flink.api.java.typeutils.runtime.TupleSerializer(
                    org.apache.flink.api.java.tuple.Tuple6.class,
                    new TypeSerializer[] {l, l, l, in, l, l});
            states.add(new MapStateDescriptor<>("left-records", bid, in));
            states.add(new MapStateDescriptor<>("right-records", auction, in));
            writer = (st, i) -> {
                long[] r = data[i];
                Object record = r[1] == 0
                        ? org.apache.flink.api.java.tuple.Tuple4.of(r[2], r[3], r[4], r[5])
                        : org.apache.flink.api.java.tuple.Tuple6.of(r[2], r[3], r[7], (int) r[4],
                                r[5], r[6]);
                ((MapState<Object, Object>) st.get((int) r[1])).put(record, 1);
            };
        } else {
            states.add(new MapStateDescriptor<>("data-state-with-append", l,
                    BytePrimitiveArraySerializer.INSTANCE));
            writer = (st, i) -> {
                long[] r = data[i];
                MapState<Object, Object> map = (MapState<Object, Object>) st.get(0);
                if (r[2] == 0) {
                    map.remove(r[1]);
                    return;
                }
                ByteBuffer rows = ByteBuffer.allocate((int) (32 * r[2]));
                for (long n = 0; n < r[2]; n++) {
                    rows.putLong(r[0]).putLong(r[3]).putLong(r[1]).putLong(r[4]);
                }
                map.put(r[1], rows.array());
            };
        }
        if (ttl != null) {
            for (StateDescriptor<?, ?> d : states) {
                d.enableTimeToLive(ttl);
            }
        }
        return new Side("Operators.java", LongSerializer.INSTANCE, states,
                i -> (Object) data[(int) i][0], writer);
    }

    // --------------------------------------------------------------------------------------
    // Flink's full checkpoint of n keys
    // --------------------------------------------------------------------------------------

    static AbstractKeyedStateBackend<Object> open(Side side, String backend, File dir,
                                                  CloseableRegistry registry,
                                                  KeyGroupRange range) throws Exception {
        ClassLoader loader = RowFormatProbe.class.getClassLoader();
        if (backend.equals("hashmap")) {
            return new HeapKeyedStateBackendBuilder<>(
                    null, side.keySerializer, loader, MAX_PARALLELISM, range,
                    new ExecutionConfig(), TtlTimeProvider.DEFAULT,
                    LatencyTrackingStateConfig.disabled(), SizeTrackingStateConfig.disabled(),
                    new ArrayList<>(), UncompressedStreamCompressionDecorator.INSTANCE,
                    LocalRecoveryConfig.BACKUP_AND_RECOVERY_DISABLED,
                    new HeapPriorityQueueSetFactory(range, MAX_PARALLELISM, 128),
                    true, registry).build();
        }
        if (!dir.isDirectory() && !dir.mkdirs()) {
            throw new IllegalArgumentException("cannot create " + dir);
        }
        RocksDBResourceContainer resources = new RocksDBResourceContainer(new Configuration(),
                PredefinedOptions.DEFAULT, null, null, dir, false);
        registry.registerCloseable(() -> {
            try {
                resources.close();
            } catch (Exception e) {
                throw new java.io.IOException(e);
            }
        });
        RocksDBKeyedStateBackendBuilder<Object> builder = new RocksDBKeyedStateBackendBuilder<>(
                "row-format-probe", loader, dir, resources, name -> resources.getColumnOptions(),
                null, side.keySerializer, MAX_PARALLELISM, range, new ExecutionConfig(),
                LocalRecoveryConfig.BACKUP_AND_RECOVERY_DISABLED,
                RocksDBPriorityQueueConfig.buildWithPriorityQueueType(
                        EmbeddedRocksDBStateBackend.PriorityQueueStateType.ROCKSDB),
                TtlTimeProvider.DEFAULT, LatencyTrackingStateConfig.disabled(),
                SizeTrackingStateConfig.disabled(), new UnregisteredMetricsGroup(),
                (name, value) -> {}, new ArrayList<>(),
                UncompressedStreamCompressionDecorator.INSTANCE, registry);
        // full snapshots, as the SQL job (execution.checkpointing.incremental: false) and the
        // lane (mode full) take them; the builder's setter is package-private
        Method incremental = RocksDBKeyedStateBackendBuilder.class.getDeclaredMethod(
                "setEnableIncrementalCheckpointing", boolean.class);
        incremental.setAccessible(true);
        incremental.invoke(builder, false);
        return builder.build();
    }

    /**
     * The state's history replayed: each input row's new state value (the replay file: the
     * entry's columns, then the row's ts) written in order into two backends holding the key
     * groups' halves (a job at parallelism 2), both snapshotted whenever the input passes one
     * of `times` (the run's checkpoint times on that side). On RocksDB each snapshot flushes
     * the memtable into a new SST file, as the runs' checkpoints do, so the sizes carry the
     * versions of keys overwritten between flushes until a compaction merges them.
     * Returns [[time, bytes of both backends' snapshots], ...].
     */
    static ArrayNode replay(SqlJob.Job job, boolean sqlSide, String backend, JsonNode jobNode,
                            JsonNode times, File dir) throws Exception {
        int columns = jobNode.path("replay_columns").asInt();
        long[][] data = readData(new File(jobNode.path("replay").asText()), columns);
        Side side = sqlSide ? sqlSide(job, data) : laneSide(job, data);
        return replay(side, backend, data, times, dir);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static ArrayNode replay(Side side, String backend, long[][] data, JsonNode times, File dir)
            throws Exception {
        int columns = data.length == 0 ? 1 : data[0].length;
        int half = MAX_PARALLELISM / 2;
        KeyGroupRange[] ranges = {KeyGroupRange.of(0, half - 1),
            KeyGroupRange.of(half, MAX_PARALLELISM - 1)};
        CloseableRegistry registry = new CloseableRegistry();
        List<AbstractKeyedStateBackend<Object>> backends = new ArrayList<>();
        List<List<State>> states = new ArrayList<>();
        ArrayNode out = SqlJob.JSON.createArrayNode();
        try {
            for (int t = 0; t < 2; t++) {
                AbstractKeyedStateBackend<Object> b = open(side, backend,
                        new File(dir, backend + "-" + t), registry, ranges[t]);
                backends.add(b);
                List<State> registered = new ArrayList<>();
                for (StateDescriptor<?, ?> desc : side.states) {
                    registered.add(b.getPartitionedState(VoidNamespace.INSTANCE,
                            VoidNamespaceSerializer.INSTANCE, (StateDescriptor) desc));
                }
                states.add(registered);
            }
            int next = 0;
            long id = 1;
            for (int i = 0; i <= data.length; i++) {
                long ts = i < data.length ? data[i][columns - 1] : Long.MAX_VALUE;
                while (next < times.size() && ts > times.get(next).asLong()) {
                    long bytes = 0;
                    for (AbstractKeyedStateBackend<Object> b : backends) {
                        bytes += snapshot(b, id);
                    }
                    id++;
                    ArrayNode point = out.addArray();
                    point.add(times.get(next).asLong());
                    point.add(bytes);
                    next++;
                }
                if (i == data.length) {
                    break;
                }
                Object key = side.key.apply(i);
                int group = org.apache.flink.runtime.state.KeyGroupRangeAssignment
                        .assignToKeyGroup(key, MAX_PARALLELISM);
                int t = group < half ? 0 : 1;
                backends.get(t).setCurrentKey(key);
                side.writer.write(states.get(t), i);
            }
        } finally {
            for (AbstractKeyedStateBackend<Object> b : backends) {
                b.dispose();
            }
            registry.close();
        }
        return out;
    }

    /** One full checkpoint of `b`: its handle's state size. */
    static long snapshot(AbstractKeyedStateBackend<Object> b, long id) throws Exception {
        RunnableFuture<SnapshotResult<KeyedStateHandle>> future = b.snapshot(id, id,
                new MemCheckpointStreamFactory(Integer.MAX_VALUE),
                CheckpointOptions.forCheckpointWithDefaultLocation());
        future.run();
        KeyedStateHandle handle = future.get().getJobManagerOwnedSnapshot();
        b.notifyCheckpointComplete(id);
        return handle == null ? 0L : handle.getStateSize();
    }

    /** The full checkpoint's size (Flink's state size of the keyed handle) of n keys. */
    static long snapshotBytes(Side side, String backend, long n, File dir) throws Exception {
        CloseableRegistry registry = new CloseableRegistry();
        AbstractKeyedStateBackend<Object> b = open(side, backend, dir, registry,
                KeyGroupRange.of(0, MAX_PARALLELISM - 1));
        try {
            ValueState<Object> state = b.getPartitionedState(
                    VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, side.descriptor);
            for (long i = 0; i < n; i++) {
                b.setCurrentKey(side.key.apply(i));
                state.update(side.value.apply(i));
            }
            RunnableFuture<SnapshotResult<KeyedStateHandle>> future = b.snapshot(1L, 1L,
                    new MemCheckpointStreamFactory(Integer.MAX_VALUE),
                    CheckpointOptions.forCheckpointWithDefaultLocation());
            future.run();
            KeyedStateHandle handle = future.get().getJobManagerOwnedSnapshot();
            if (handle == null) {
                return 0L;
            }
            return handle.getStateSize();
        } finally {
            b.dispose();
            registry.close();
        }
    }
}
