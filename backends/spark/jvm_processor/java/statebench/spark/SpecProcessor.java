package statebench.spark;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.ListState;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;

import scala.Tuple2;
import scala.Tuple3;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The spark-tws lane's processor (backends/spark/tws.py SpecProcessor) as a JVM
 * StatefulProcessor: one value, list and map state per key with the same TTL, each event's
 * operation applied in ord order within its key, one output row (ord, batch time, result hash)
 * per event. It runs inside the executor, so a state call is a call into the state store, not
 * a round trip to a Python worker; that is what it is measured for.
 *
 * Input rows are (key bigint, ord bigint, op tinyint, v, mk int), in that order; v is a
 * bigint, string or binary (valueType "long", "string", "bytes").
 */
public final class SpecProcessor extends StatefulProcessor<Long, Row, Tuple3<Long, Long, Long>> {
    private static final long serialVersionUID = 1L;

    static final int V_GET = 0, V_UPDATE = 1, V_CLEAR = 2, V_RMW = 3, L_ADD = 4, L_GET = 5,
        M_PUT = 6, M_GET = 7, M_ITERATE = 8, M_REMOVE = 9;
    static final List<String> OPS = Arrays.asList("value_get", "value_update", "value_clear",
        "value_rmw", "list_add", "list_get", "map_put", "map_get", "map_iterate", "map_remove");

    private final String valueType;
    private final boolean hasValue, hasList, hasMap;
    private final long ttlMs;
    private final int extraReads;
    /** wire op code (0..255) -> index in OPS, -1 where the code has no operation here */
    private final int[] opOf;

    private transient ValueState<Object> value;
    private transient ListState<Object> list;
    private transient MapState<Integer, Object> map;

    /**
     * @param stateTypes comma-separated: value, list, map
     * @param opCodes    comma-separated name=code pairs (workloads.ops.Op's wire codes)
     * @param ttlMs      ttlDurationMs of every state, 0 for none
     * @param extraReads state reads added after every event's operation
     */
    public SpecProcessor(String valueType, String stateTypes, String opCodes, long ttlMs,
                         int extraReads) {
        this.valueType = valueType;
        List<String> types = Arrays.asList(stateTypes.split(","));
        this.hasValue = types.contains("value");
        this.hasList = types.contains("list");
        this.hasMap = types.contains("map");
        this.ttlMs = ttlMs;
        this.extraReads = extraReads;
        this.opOf = new int[256];
        Arrays.fill(opOf, -1);
        for (String pair : opCodes.split(",")) {
            String[] kv = pair.split("=");
            int index = OPS.indexOf(kv[0]);
            if (index >= 0) {
                opOf[Integer.parseInt(kv[1]) & 0xff] = index;
            }
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private Encoder<Object> valueEncoder() {
        switch (valueType) {
            case "long": return (Encoder) Encoders.LONG();
            case "string": return (Encoder) Encoders.STRING();
            case "bytes": return (Encoder) Encoders.BINARY();
            default: throw new IllegalArgumentException("value type " + valueType);
        }
    }

    @Override
    public void init(OutputMode outputMode, TimeMode timeMode) {
        TTLConfig ttl = ttlMs > 0 ? TTLConfig.apply(Duration.ofMillis(ttlMs)) : TTLConfig.NONE();
        Encoder<Object> enc = valueEncoder();
        if (hasValue) {
            value = getHandle().getValueState("value", enc, ttl);
        }
        if (hasList) {
            list = getHandle().getListState("list", enc, ttl);
        }
        if (hasMap) {
            map = getHandle().getMapState("map", Encoders.INT(), enc, ttl);
        }
    }

    private Object valueOf(Row r) {
        switch (valueType) {
            case "long": return r.getLong(3);
            case "string": return r.getString(3);
            default: return r.get(3);
        }
    }

    private static long hashOf(Object read) {
        int h = read instanceof byte[] ? Arrays.hashCode((byte[]) read) : Objects.hashCode(read);
        return ((long) h & 0xffffffffL) | (1L << 32);
    }

    private long apply(int op, Row r) {
        switch (op) {
            case V_GET: return hashOf(value.get());
            case V_UPDATE: value.update(valueOf(r)); return 0L;
            case V_CLEAR: value.clear(); return 0L;
            case V_RMW: {
                Object old = value.get();
                value.update(valueOf(r));
                return hashOf(old);
            }
            case L_ADD: list.appendValue(valueOf(r)); return 0L;
            case L_GET: {
                List<Object> all = new ArrayList<>();
                list.get().foreach(all::add);
                return hashOf(all);
            }
            case M_PUT: map.updateValue(r.getInt(4), valueOf(r)); return 0L;
            case M_GET: return hashOf(map.getValue(r.getInt(4)));
            case M_ITERATE: {
                List<Tuple2<Integer, Object>> all = new ArrayList<>();
                map.iterator().foreach(all::add);
                all.sort(Comparator.comparing(t -> t._1()));
                return hashOf(all.toString());
            }
            case M_REMOVE: map.removeKey(r.getInt(4)); return 0L;
            default: throw new IllegalArgumentException("op " + op);
        }
    }

    private void extra(Row r) {
        for (int i = 0; i < extraReads; i++) {
            if (value != null) {
                value.get();
            } else if (map != null) {
                map.getValue(r.getInt(4));
            } else {
                list.exists();
            }
        }
    }

    @Override
    public scala.collection.Iterator<Tuple3<Long, Long, Long>> handleInputRows(
            Long key, scala.collection.Iterator<Row> rows, TimerValues timerValues) {
        long now = timerValues.getCurrentProcessingTimeInMs();
        List<Row> sorted = new ArrayList<>();
        rows.foreach(sorted::add);
        sorted.sort(Comparator.comparingLong(r -> r.getLong(1)));
        List<Tuple3<Long, Long, Long>> out = new ArrayList<>(sorted.size());
        for (Row r : sorted) {
            int op = opOf[r.getByte(2) & 0xff];
            if (op < 0) {
                throw new IllegalArgumentException("op code " + r.getByte(2)
                    + " has no transformWithState operation");
            }
            long h = apply(op, r);
            extra(r);
            out.add(new Tuple3<>(r.getLong(1), now, h));
        }
        return CollectionConverters.asScala(out.iterator());
    }
}
