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
 * Flink's own per-op rates, JMH style but inside the worker, for one op on one or more states
 * measured side by side (TTL off, on, on without background cleanup: bench/flink_ops.py).
 *
 * <p>Rounds: in every round each state runs one iteration of a fixed wall time, the states in an
 * order rotated by one each round (so no state always runs right after a list refill or first
 * after a GC-heavy neighbour). A state's rate is thus measured at the same moments as the
 * others', and a ratio of two states' rates in one round cancels what the machine did in that
 * round. The first {@code minWarmup} rounds are warm-up; warm-up goes on until every state's last
 * two warm-up iterations are within {@link #STEADY} of each other by CPU time, or {@code warmup}
 * rounds have run. (A steadiness check alone stops too early: Flink's heap TTL value update sits
 * at 5.3 M ops/s for 2 s before HotSpot's final compilation takes it to 8 M.)
 *
 * <p>A run may warm up only ({@code rounds} 0), and a later run may resume it ({@code resume}):
 * the same states and inputs, no refill, flush, compaction or collection before its rounds. So
 * the caller can interleave single measured iterations of several JVMs, one state each
 * (bench/flink_ops.py: the forks of an op's TTL modes, alive together, measured in turn).
 *
 * <p>Before the first round the heap is collected in full, outside the timed window, so the
 * states' objects lie in the order a full collection leaves them, the same in every fork (Flink's
 * heap list get measured 4.9 M ops/s in one fork and 11.3 M in the next without it). It is not
 * collected before every iteration (JMH's {@code -gc true}): that would leave out the young
 * collections TTL's new TtlValue objects cause, part of what TTL costs on the heap (a TTL map
 * put ran at 0.45 M ops/s with a collection before each 250 ms iteration and 0.16-0.5 M
 * without).
 *
 * <p>The result is one map per state: {@code rates} (ops/s per measured iteration, wall clock, as
 * JMH), {@code cpu_rates} (ops per second of this process's CPU time, which includes the GC and
 * JIT threads, over the same iterations; a shared machine's descheduling does not count there),
 * {@code warmup} (the warm-up iterations' CPU-time rates) and {@code steady} (whether the
 * warm-up ended because the rates settled rather than because it ran out); and, so that a caller
 * interleaving several JVMs can charge each iteration with the CPU its process spent until its
 * next one (RocksDB's flushes and compactions run on after the iteration that caused them),
 * {@code ops} and {@code cpu_starts_ns} (each measured iteration's ops and the process CPU clock
 * at its start) and {@code cpu_clock_ns} (the clock when the run returned). A fresh JVM per fork
 * is the caller's job.
 *
 * <p>Ops (long keys 0..keys-1 in a seeded shuffled order, LONG values; maps hold 10 user keys per
 * key): value_update, value_get, list_add, list_get (get and consume), map_put, map_get,
 * map_iterate (counted per entry, as flink-benchmarks' @OperationsPerInvocation(10)). A state is
 * filled untimed before the first round (one value / one element / ten entries per key; value
 * and map ops keep those sizes), lists again before every list_add iteration, so list lengths
 * stay bounded as in flink-benchmarks' per-iteration setup.
 *
 * <p>The states share the loop's call sites, so a call site sees two state classes (a
 * TtlValueState and a HeapValueState, say) where a JMH fork per state sees one: HotSpot inlines
 * both behind a type check (bimorphic inlining), a nanosecond against the op's hundred or more.
 */
final class Bench {
    static final int MAP_KEYS = 10;
    /** Warm-up is over when each state's last two iterations differ by at most this share. */
    static final double STEADY = 0.05;
    /** States already filled (Registered has identity equality; weak: a reset drops them). */
    private static final java.util.Set<FlinkBackend.Registered> FILLED =
            java.util.Collections.newSetFromMap(new java.util.WeakHashMap<>());
    /** Keeps results observable so the JIT cannot drop the work. */
    static volatile long sink;

    private Bench() {}

    /** The inputs every iteration draws from: keys in a seeded shuffled order, values, map keys. */
    private static final class Inputs {
        final Long[] keyObjs;
        final int[] order;
        final Long[] values = new Long[1024];
        final Long[] mapKeys = new Long[MAP_KEYS];

        Inputs(int keys) {
            keyObjs = new Long[keys];
            order = new int[keys];
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
            for (int i = 0; i < values.length; i++) {
                values[i] = rnd.nextLong() % 1_000_000L;
            }
            for (int i = 0; i < MAP_KEYS; i++) {
                mapKeys[i] = (long) i;
            }
        }
    }

    /** The inputs of the last call, reused by a resumed one (the same key objects). */
    private static Inputs lastInputs;

    static List<Map<String, Object>> run(FlinkBackend fb, List<FlinkBackend.Registered> states,
                                         String op, int keys, int minWarmup, int warmup,
                                         int rounds, int roundMs, boolean resume)
            throws Exception {
        if (fb.options.stringKeys) {
            throw new IllegalArgumentException("the in-JVM benchmark needs a worker with long keys");
        }
        if (resume && (lastInputs == null || lastInputs.keyObjs.length != keys)) {
            throw new IllegalArgumentException("a resumed benchmark needs a run over the same "
                    + keys + " keys in this JVM before it");
        }
        Inputs in = resume ? lastInputs : new Inputs(keys);
        lastInputs = in;
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean)
                        ManagementFactory.getOperatingSystemMXBean();
        int n = states.size();
        List<List<Double>> warm = new ArrayList<>();
        List<List<Double>> rates = new ArrayList<>();
        List<List<Double>> cpuRates = new ArrayList<>();
        List<List<Long>> ops = new ArrayList<>();
        List<List<Long>> cpuStarts = new ArrayList<>();
        for (FlinkBackend.Registered r : states) {
            // filled once per state and JVM (value and map ops leave the sizes as they were);
            // lists before every list op
            if (FILLED.add(r) || (r.kind == FlinkBackend.LIST && !resume)) {
                setup(fb, r, in);
            }
            warm.add(new ArrayList<>());
            rates.add(new ArrayList<>());
            cpuRates.add(new ArrayList<>());
            ops.add(new ArrayList<>());
            cpuStarts.add(new ArrayList<>());
        }
        // RocksDB: every op starts on a flushed, compacted DB (reads from SST files, no
        // compaction left running whose CPU would land on the measured iterations)
        // (a resumed run goes on where the last one stopped: its rounds continue that run's)
        if (!resume) {
            fb.flush();
            fb.compact();
            System.gc();  // the filled states compacted into the old generation, in one order
        }
        int perInvocation = op.equals("map_iterate") ? MAP_KEYS : 1;
        boolean warming = warmup > 0;
        boolean steady = warmup == 0;
        for (int round = 0; warming || rates.get(0).size() < rounds; round++) {
            for (int s = 0; s < n; s++) {
                int i = (round + s) % n;
                FlinkBackend.Registered r = states.get(i);
                if (op.equals("list_add")) {
                    setup(fb, r, in);
                }
                long[] timed = iteration(fb, r, op, in, keys, roundMs, os);
                double rate = timed[0] * perInvocation * 1e9 / timed[1];
                double cpuRate = timed[2] > 0 ? timed[0] * perInvocation * 1e9 / timed[2] : rate;
                if (warming) {
                    warm.get(i).add(cpuRate);
                } else {
                    rates.get(i).add(rate);
                    cpuRates.get(i).add(cpuRate);
                    ops.get(i).add(timed[0] * perInvocation);
                    cpuStarts.get(i).add(timed[3]);
                }
            }
            if (warming && round + 1 >= Math.max(2, minWarmup)) {
                // steadiness by CPU time: on a shared machine the wall clock never settles
                steady = true;
                for (List<Double> w : warm) {
                    double a = w.get(w.size() - 2);
                    double b = w.get(w.size() - 1);
                    steady &= Math.abs(b - a) <= STEADY * Math.max(a, b);
                }
                warming = !steady && round + 1 < warmup;
            }
        }
        long cpuClock = os.getProcessCpuTime();
        List<Map<String, Object>> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("rates", new ArrayList<Object>(rates.get(i)));
            m.put("cpu_rates", new ArrayList<Object>(cpuRates.get(i)));
            m.put("ops", new ArrayList<Object>(ops.get(i)));
            m.put("cpu_starts_ns", new ArrayList<Object>(cpuStarts.get(i)));
            m.put("warmup", new ArrayList<Object>(warm.get(i)));
            m.put("steady", steady);
            m.put("cpu_clock_ns", cpuClock);
            out.add(m);
        }
        return out;
    }

    /** One iteration of {@code roundMs}: {ops, wall ns, process CPU ns, process CPU clock ns at
     *  its start}. */
    private static long[] iteration(FlinkBackend fb, FlinkBackend.Registered r, String op,
                                    Inputs in, int keys, int roundMs,
                                    com.sun.management.OperatingSystemMXBean os) throws Exception {
        long deadline = (long) roundMs * 1_000_000L;
        long count = 0;
        int pos = 0;
        long acc = 0;
        long cpuStart = os.getProcessCpuTime();
        long start = System.nanoTime();
        long elapsed;
        do {
            for (int j = 0; j < 256; j++) {
                int k = in.order[pos];
                pos = pos + 1 == keys ? 0 : pos + 1;
                fb.backend.setCurrentKey(in.keyObjs[k]);
                Long v = in.values[(int) (count + j) & 1023];
                acc += one(r, op, v, in.mapKeys[(int) ((count + j) % MAP_KEYS)]);
            }
            count += 256;
            elapsed = System.nanoTime() - start;
        } while (elapsed < deadline);
        long cpu = os.getProcessCpuTime() - cpuStart;
        sink += acc;
        return new long[] {count, elapsed, cpu, cpuStart};
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
    private static void setup(FlinkBackend fb, FlinkBackend.Registered r, Inputs in)
            throws Exception {
        for (int i = 0; i < in.keyObjs.length; i++) {
            fb.backend.setCurrentKey(in.keyObjs[i]);
            Long v = in.values[i & 1023];
            switch (r.kind) {
                case FlinkBackend.VALUE:
                    ((ValueState<Long>) r.state).update(v);
                    break;
                case FlinkBackend.LIST:
                    ((ListState<Long>) r.state).update(java.util.Collections.singletonList(v));
                    break;
                case FlinkBackend.MAP: {
                    MapState<Long, Long> m = (MapState<Long, Long>) r.state;
                    for (Long mk : in.mapKeys) {
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
