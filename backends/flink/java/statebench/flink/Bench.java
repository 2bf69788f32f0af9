package statebench.flink;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.ValueState;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Flink's own per-op rates, JMH style but inside the worker: warm-up rounds, then measured rounds
 * of a fixed wall time each; one rate (ops/s) per measured round. The caller takes the median.
 *
 * <p>Ops (long keys 0..keys-1 in a seeded shuffled order, LONG values; maps hold 10 user keys per
 * key): value_update, value_get, list_add, list_get (get and consume), map_put, map_get,
 * map_iterate (counted per entry, as flink-benchmarks' @OperationsPerInvocation(10)). The state is
 * filled untimed before the first round (one value / one element / ten entries per key), and for
 * list_add before every round, so list lengths stay bounded as in flink-benchmarks'
 * per-iteration setup.
 */
final class Bench {
    static final int MAP_KEYS = 10;
    /** Keeps results observable so the JIT cannot drop the work. */
    static volatile long sink;

    private Bench() {}

    @SuppressWarnings("unchecked")
    static List<Object> run(FlinkBackend fb, FlinkBackend.Registered r, String op, int keys,
                            int warmup, int rounds, int roundMs) throws Exception {
        if (fb.options.stringKeys) {
            throw new IllegalArgumentException("the in-JVM benchmark needs a worker with long keys");
        }
        Long[] keyObjs = new Long[keys];
        int[] order = new int[keys];
        for (int i = 0; i < keys; i++) {
            keyObjs[i] = (long) i;
            order[i] = i;
        }
        Random rnd = new Random(42);
        for (int i = keys - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        Long[] values = new Long[1024];
        for (int i = 0; i < values.length; i++) {
            values[i] = rnd.nextLong() % 1_000_000L;
        }
        Long[] mapKeys = new Long[MAP_KEYS];
        for (int i = 0; i < MAP_KEYS; i++) {
            mapKeys[i] = (long) i;
        }
        List<Object> rates = new ArrayList<>();
        int perInvocation = op.equals("map_iterate") ? MAP_KEYS : 1;
        for (int round = 0; round < warmup + rounds; round++) {
            if (round == 0 || op.equals("list_add")) {
                setup(fb, r, keyObjs, values, mapKeys);
            }
            long deadline = (long) roundMs * 1_000_000L;
            long count = 0;
            int pos = 0;
            long acc = 0;
            long start = System.nanoTime();
            long elapsed;
            do {
                for (int j = 0; j < 256; j++) {
                    int k = order[pos];
                    pos = pos + 1 == keys ? 0 : pos + 1;
                    fb.backend.setCurrentKey(keyObjs[k]);
                    Long v = values[(int) (count + j) & 1023];
                    acc += one(r, op, v, mapKeys[(int) ((count + j) % MAP_KEYS)]);
                }
                count += 256;
                elapsed = System.nanoTime() - start;
            } while (elapsed < deadline);
            sink += acc;
            if (round >= warmup) {
                rates.add(count * perInvocation * 1e9 / elapsed);
            }
        }
        return rates;
    }

    @SuppressWarnings("unchecked")
    private static long one(FlinkBackend.Registered r, String op, Long v, Long mk)
            throws Exception {
        switch (op) {
            case "value_update":
                ((ValueState<Long>) r.state).update(v);
                return 0;
            case "value_get": {
                Long x = ((ValueState<Long>) r.state).value();
                return x == null ? 0 : x;
            }
            case "list_add":
                ((ListState<Long>) r.state).add(v);
                return 0;
            case "list_get": {
                Iterable<Long> it = ((ListState<Long>) r.state).get();
                long n = 0;
                if (it != null) {
                    for (Long x : it) {
                        n += x;
                    }
                }
                return n;
            }
            case "map_put":
                ((MapState<Long, Long>) r.state).put(mk, v);
                return 0;
            case "map_get": {
                Long x = ((MapState<Long, Long>) r.state).get(mk);
                return x == null ? 0 : x;
            }
            case "map_iterate": {
                Iterable<Map.Entry<Long, Long>> it = ((MapState<Long, Long>) r.state).entries();
                long n = 0;
                if (it != null) {
                    for (Map.Entry<Long, Long> e : it) {
                        n += e.getKey();
                    }
                }
                return n;
            }
            default:
                throw new IllegalArgumentException("unknown benchmark op '" + op + "'");
        }
    }

    @SuppressWarnings("unchecked")
    private static void setup(FlinkBackend fb, FlinkBackend.Registered r, Long[] keys,
                              Long[] values, Long[] mapKeys) throws Exception {
        for (int i = 0; i < keys.length; i++) {
            fb.backend.setCurrentKey(keys[i]);
            Long v = values[i & 1023];
            switch (r.kind) {
                case FlinkBackend.VALUE:
                    ((ValueState<Long>) r.state).update(v);
                    break;
                case FlinkBackend.LIST:
                    ((ListState<Long>) r.state).update(java.util.Collections.singletonList(v));
                    break;
                case FlinkBackend.MAP: {
                    MapState<Long, Long> m = (MapState<Long, Long>) r.state;
                    for (Long mk : mapKeys) {
                        m.put(mk, v);
                    }
                    break;
                }
                default:
                    throw new IllegalArgumentException("benchmarks cover value, list and map state");
            }
        }
    }
}
