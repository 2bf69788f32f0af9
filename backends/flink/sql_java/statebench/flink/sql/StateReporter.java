package statebench.flink.sql;

import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;
import org.apache.flink.metrics.View;
import org.apache.flink.metrics.reporter.Scheduled;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Samples RocksDB's native state-size properties of every keyed backend of the job.
 *
 * <p>Why a reporter: Flink registers a gauge per column family (one per state, timers included)
 * and property when {@code state.backend.rocksdb.metrics.<property>} is on, and reads it under
 * the metric monitor's lock, which the backend closes before its database: a reporter reads
 * them safely from its own thread while the job runs, where reading a backend directly could
 * touch a closed database. Each report (every 50 ms wall) sums each property over the column
 * families and subtasks and keeps one sample per sample interval of the paced clock; under the
 * event clock the source asks for each sample at its records' time instead ({@link #sample}).
 * The HashMap backend exposes no state-size metric; its measure is the checkpoints' full size.
 *
 * <p>It also keeps the keyed task's {@code numRecordsIn} and {@code accumulateBusyTimeMs} (per
 * subtask, their final values when the task's metrics are removed): the keyed operator's input
 * records over its busy time, as statebench measures its lanes' records/s.
 */
public final class StateReporter implements MetricReporter, Scheduled {
    private static final Map<String, Gauge<?>> GAUGES = new ConcurrentHashMap<>();
    private static final Map<String, String> PROPERTY = new ConcurrentHashMap<>();
    private static final Map<String, String> FAMILY = new ConcurrentHashMap<>();
    private static final Object LOCK = new Object();
    private static ArrayNode samples = SqlJob.JSON.createArrayNode();
    private static long sampleIntervalMs = 1000L;
    private static long nextSampleMs = Long.MIN_VALUE;
    /** The keyed task's numRecordsIn and accumulateBusyTimeMs per subtask: live metrics, and
     *  the last values of removed ones (a task's metrics go when it finishes). */
    private static final Map<String, Metric> TASK = new ConcurrentHashMap<>();
    private static final Map<String, String> TASK_KEY = new ConcurrentHashMap<>();
    private static final Map<String, Long> TASK_FINAL = new ConcurrentHashMap<>();
    /** TASK, TASK_KEY and TASK_FINAL change together under this lock: the MiniCluster removes
     *  a finished job's task metrics on its own threads while the report reads them, and a
     *  metric seen in TASK whose key was already removed made TreeMap.merge throw a bare
     *  NullPointerException (the job's report, and with it the whole SQL job, failed). */
    private static final Object TASK_LOCK = new Object();
    static final String RECORDS_IN = "numRecordsIn";
    static final String BUSY_MS = "accumulateBusyTimeMs";

    /** The factory Flink finds through META-INF/services (written by the build). */
    public static final class Factory implements MetricReporterFactory {
        @Override
        public MetricReporter createMetricReporter(Properties properties) {
            return new StateReporter();
        }
    }

    /** A new job: no samples, one every {@code intervalMs} clock ms from the first record.
     *  The last job's task metrics are forgotten too: the MiniCluster unregisters them after
     *  its result, and one removed after this reset merged the last job's count into this
     *  job's (a dedup after a dedup at parallelism 2 read 18400 + 10874 records in). */
    static void reset(long intervalMs) {
        synchronized (TASK_LOCK) {
            TASK.clear();
            TASK_KEY.clear();
            TASK_FINAL.clear();
        }
        synchronized (LOCK) {
            samples = SqlJob.JSON.createArrayNode();
            sampleIntervalMs = intervalMs;
            nextSampleMs = Long.MIN_VALUE;
        }
    }

    /** The samples so far (the whole job's, once it has finished). */
    static ArrayNode samples() {
        synchronized (LOCK) {
            return samples.deepCopy();
        }
    }

    @Override
    public void open(MetricConfig config) {
    }

    @Override
    public void close() {
    }

    /** "subtask/metric" of a task-level numRecordsIn or accumulateBusyTimeMs of a task that is
     *  not a source (the keyed operator's task: every query here has one), else null. */
    private static String taskKey(String metricName, MetricGroup group) {
        if (!metricName.equals(RECORDS_IN) && !metricName.equals(BUSY_MS)) {
            return null;
        }
        Map<String, String> vars = group.getAllVariables();
        String task = vars.get("<task_name>");
        if (task == null || vars.containsKey("<operator_name>") || task.startsWith("Source")) {
            return null;
        }
        return vars.getOrDefault("<subtask_index>", "0") + "/" + metricName;
    }

    private static long valueOf(Metric metric) {
        if (metric instanceof org.apache.flink.metrics.Counter) {
            return ((org.apache.flink.metrics.Counter) metric).getCount();
        }
        Object v = metric instanceof Gauge ? ((Gauge<?>) metric).getValue() : null;
        return v instanceof Number ? ((Number) v).longValue() : 0L;
    }

    /** Per subtask: the keyed task's input records and busy ms (live or final values). */
    static Map<String, long[]> keyedTask() {
        Map<String, Long> all;
        synchronized (TASK_LOCK) {
            all = new TreeMap<>(TASK_FINAL);
            for (Map.Entry<String, Metric> e : TASK.entrySet()) {
                String key = TASK_KEY.get(e.getKey());
                if (key != null) {
                    all.merge(key, valueOf(e.getValue()), Math::max);
                }
            }
        }
        Map<String, long[]> out = new TreeMap<>();
        for (Map.Entry<String, Long> e : all.entrySet()) {
            String[] parts = e.getKey().split("/", 2);
            long[] v = out.computeIfAbsent(parts[0], k -> new long[2]);
            v[parts[1].equals(RECORDS_IN) ? 0 : 1] = e.getValue();
        }
        return out;
    }

    /** Task attempt id -> its task-level {@code currentInputWatermark} gauge (the keyed
     *  operator's input watermark, the minimum over its inputs: {@link EventClock} reads it). */
    private static final Map<String, Gauge<?>> INPUT_WATERMARK = new ConcurrentHashMap<>();
    static final String INPUT_WATERMARK_METRIC = "currentInputWatermark";

    /** The task attempts of the keyed tasks (not sources): {@link #keyedInputWatermark}. */
    private static final Map<String, Gauge<?>> KEYED_WATERMARK = new ConcurrentHashMap<>();

    /** The smallest input watermark of the running keyed tasks ({@code Long.MAX_VALUE} when
     *  none is registered: nothing to wait for). */
    static long keyedInputWatermark() {
        long min = Long.MAX_VALUE;
        for (Gauge<?> g : KEYED_WATERMARK.values()) {
            Object v = g.getValue();
            if (v instanceof Long && (Long) v < min) {
                min = (Long) v;
            }
        }
        return min;
    }

    /** The task-level input watermark gauge of the task attempt {@code attemptId}, or null
     *  while it is not registered. */
    static Gauge<?> inputWatermark(String attemptId) {
        return INPUT_WATERMARK.get(attemptId);
    }

    @Override
    public void notifyOfAddedMetric(Metric metric, String metricName, MetricGroup group) {
        if (metricName.equals(INPUT_WATERMARK_METRIC) && metric instanceof Gauge) {
            Map<String, String> vars = group.getAllVariables();
            String attempt = vars.get("<task_attempt_id>");
            if (attempt != null && !vars.containsKey("<operator_name>")) {
                INPUT_WATERMARK.put(attempt, (Gauge<?>) metric);
                String task = vars.get("<task_name>");
                if (task != null && !task.startsWith("Source")) {
                    KEYED_WATERMARK.put(attempt, (Gauge<?>) metric);
                }
            }
            return;
        }
        String key = taskKey(metricName, group);
        if (key != null) {
            String id = group.getMetricIdentifier(metricName);
            synchronized (TASK_LOCK) {
                TASK.put(id, metric);
                TASK_KEY.put(id, key);
            }
            return;
        }
        if (!(metric instanceof Gauge) || !metricName.startsWith("rocksdb.")) {
            return;
        }
        String property = metricName.substring("rocksdb.".length());
        for (String p : SqlJob.ROCKSDB_PROPERTIES) {
            if (p.equals(property)) {
                String id = group.getMetricIdentifier(metricName);
                String[] scope = group.getScopeComponents();
                GAUGES.put(id, (Gauge<?>) metric);
                PROPERTY.put(id, property);
                FAMILY.put(id, scope.length > 0 ? scope[scope.length - 1] : "?");
                return;
            }
        }
    }

    @Override
    public void notifyOfRemovedMetric(Metric metric, String metricName, MetricGroup group) {
        if (metricName.equals(INPUT_WATERMARK_METRIC)) {
            INPUT_WATERMARK.values().remove(metric);
            KEYED_WATERMARK.values().remove(metric);
            return;
        }
        String id = group.getMetricIdentifier(metricName);
        synchronized (TASK_LOCK) {
            Metric task = TASK.remove(id);
            String key = TASK_KEY.remove(id);
            if (task != null && key != null) {
                TASK_FINAL.merge(key, valueOf(task), Math::max);
            }
        }
        GAUGES.remove(id);
        PROPERTY.remove(id);
        FAMILY.remove(id);
    }

    @Override
    public void report() {
        if (GAUGES.isEmpty() || !SqlJob.Clock.aligned() || SqlJob.EventSamples.placed()) {
            return;
        }
        long now = SqlJob.Clock.now();
        synchronized (LOCK) {
            if (nextSampleMs != Long.MIN_VALUE && now < nextSampleMs) {
                return;
            }
            nextSampleMs = now + sampleIntervalMs;
        }
        sample(now);
    }

    /** One sample of every RocksDB gauge, summed, as the state at {@code clockMs}: from the
     *  reporter on the paced clock, or from the source at a record's time. Nothing when no
     *  gauge is registered or has a value (a backend opening or closing). */
    static void sample(long clockMs) {
        Map<String, Long> totals = new TreeMap<>();
        Map<String, Long> keysByFamily = new TreeMap<>();
        for (Map.Entry<String, Gauge<?>> e : GAUGES.entrySet()) {
            if (e.getValue() instanceof View) {
                // Flink refreshes a View every 5 s (its ViewUpdater); a sample wants it now. The
                // native monitor's update reads RocksDB under its lock, as the updater does
                ((View) e.getValue()).update();
            }
            Object v = e.getValue().getValue();
            if (!(v instanceof Number)) {
                continue;
            }
            long value = ((Number) v).longValue();
            String property = PROPERTY.get(e.getKey());
            if (property == null) {
                continue;
            }
            totals.merge(property, value, Long::sum);
            if (property.equals("estimate-num-keys")) {
                keysByFamily.merge(FAMILY.getOrDefault(e.getKey(), "?"), value, Long::sum);
            }
        }
        if (totals.isEmpty()) {
            return; // no gauge had a value (a backend opening or closing): nothing measured
        }
        long recordsIn = 0;
        for (long[] v : keyedTask().values()) {
            recordsIn += v[0];
        }
        synchronized (LOCK) {
            ObjectNode s = samples.addObject();
            s.put("clock_ms", clockMs);
            // which records the sample holds: the keyed task's input so far
            s.put("keyed_records_in", recordsIn);
            for (Map.Entry<String, Long> t : totals.entrySet()) {
                s.put(t.getKey(), t.getValue());
            }
            ObjectNode families = s.putObject("estimate_num_keys_by_state");
            for (Map.Entry<String, Long> f : keysByFamily.entrySet()) {
                families.put(f.getKey(), f.getValue());
            }
        }
    }
}
