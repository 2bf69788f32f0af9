package statebench.flink;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.ValueState;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Flink's own per-op rates, JMH style but inside the worker: warm-up iterations until the rate is
 * steady (at most {@code warmup} of them), then measured iterations of a fixed wall time each.
 *
 * <p>The result is a map: {@code rates} (ops/s per measured iteration, wall clock, as JMH),
 * {@code cpu_rates} (ops per second of this process's CPU time, which includes the GC and JIT
 * threads, over the same iterations; a shared machine's descheduling does not count there),
 * {@code warmup} (the warm-up iterations' CPU-time rates) and {@code steady} (whether the
 * warm-up ended because two consecutive iterations were within {@link #STEADY} of each other by
 * CPU time rather than because it ran out). A fresh JVM per fork is the caller's job (bench/flink_ops.py).
 *
 * <p>Ops (long keys 0..keys-1 in a seeded shuffled order, LONG values; maps hold 10 user keys per
 * key): value_update, value_get, list_add, list_get (get and consume), map_put, map_get,
 * map_iterate (counted per entry, as flink-benchmarks' @OperationsPerInvocation(10)). A state is
 * filled untimed before its first op's first iteration (one value / one element / ten entries per
 * key; value and map ops keep those sizes), lists before each list op and before every list_add
 * iteration, so list lengths stay bounded as in flink-benchmarks' per-iteration setup.
 */
final class Bench {
    static final int MAP_KEYS = 10;
    /** Warm-up is over when two consecutive iterations' rates differ by at most this share. */
    static final double STEADY = 0.05;
    /** Warm-up iterations before the steadiness check may end the warm-up. */
    static final int MIN_WARMUP = 2;
    /** States already filled (Registered has identity equality; weak: a reset drops them). */
    private static final java.util.Set<FlinkBackend.Registered> FILLED =
            java.util.Collections.newSetFromMap(new java.util.WeakHashMap<>());
    /** Keeps results observable so the JIT cannot drop the work. */
    static volatile long sink;

    private Bench() {}

    static Map<String, Object> run(FlinkBackend fb, FlinkBackend.Registered r, String op,
                                   int keys, int warmup, int rounds, int roundMs)
            throws Exception {
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
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean)
                        ManagementFactory.getOperatingSystemMXBean();
        List<Object> warm = new ArrayList<>();
        List<Object> rates = new ArrayList<>();
        List<Object> cpuRates = new ArrayList<>();
        int perInvocation = op.equals("map_iterate") ? MAP_KEYS : 1;
        boolean warming = warmup > 0;
        boolean steady = warmup == 0;
        int iteration = 0;
        while (rates.size() < rounds) {
            // filled once per state and JVM (value and map ops leave the sizes as they were);
            // lists before every list op's first iteration and every list_add iteration
            boolean list = r.kind == FlinkBackend.LIST;
            if ((iteration == 0 && (list || FILLED.add(r))) || op.equals("list_add")) {
                setup(fb, r, keyObjs, values, mapKeys);
            }
            if (iteration == 0) {
                // RocksDB: every op starts on a flushed, compacted DB (reads from SST files, no
                // compaction left running whose CPU would land on the measured iterations)
                fb.flush();
                fb.compact();
            }
            iteration++;
            long deadline = (long) roundMs * 1_000_000L;
            long count = 0;
            int pos = 0;
            long acc = 0;
            long cpuStart = os.getProcessCpuTime();
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
            long cpu = os.getProcessCpuTime() - cpuStart;
            sink += acc;
            double rate = count * perInvocation * 1e9 / elapsed;
            double cpuRate = cpu > 0 ? count * perInvocation * 1e9 / cpu : rate;
            if (warming) {
                // steadiness by CPU time: on a shared machine the wall clock never settles
                warm.add(cpuRate);
                int n = warm.size();
                if (n >= MIN_WARMUP) {
                    double a = (Double) warm.get(n - 2);
                    steady = Math.abs(cpuRate - a) <= STEADY * Math.max(cpuRate, a);
                }
                warming = !steady && n < warmup;
                continue;
            }
            rates.add(rate);
            cpuRates.add(cpuRate);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("rates", rates);
        out.put("cpu_rates", cpuRates);
        out.put("warmup", warm);
        out.put("steady", steady);
        return out;
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
