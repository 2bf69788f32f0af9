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
 * families and subtasks and keeps one sample per sample interval of the paced clock.
 * The HashMap backend exposes no state-size metric; its measure is the checkpoints' full size.
 */
public final class StateReporter implements MetricReporter, Scheduled {
    private static final Map<String, Gauge<?>> GAUGES = new ConcurrentHashMap<>();
    private static final Map<String, String> PROPERTY = new ConcurrentHashMap<>();
    private static final Map<String, String> FAMILY = new ConcurrentHashMap<>();
    private static final Object LOCK = new Object();
    private static ArrayNode samples = SqlJob.JSON.createArrayNode();
    private static long sampleIntervalMs = 1000L;
    private static long nextSampleMs = Long.MIN_VALUE;

    /** The factory Flink finds through META-INF/services (written by the build). */
    public static final class Factory implements MetricReporterFactory {
        @Override
        public MetricReporter createMetricReporter(Properties properties) {
            return new StateReporter();
        }
    }

    /** A new job: no samples, one every {@code intervalMs} clock ms from the first record. */
    static void reset(long intervalMs) {
        synchronized (LOCK) {
            samples = SqlJob.JSON.createArrayNode();
            sampleIntervalMs = intervalMs;
            nextSampleMs = Long.MIN_VALUE;
        }
    }

    /** The samples so far (the job's, once it has finished), with a last one taken now. */
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

    @Override
    public void notifyOfAddedMetric(Metric metric, String metricName, MetricGroup group) {
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
        String id = group.getMetricIdentifier(metricName);
        GAUGES.remove(id);
        PROPERTY.remove(id);
        FAMILY.remove(id);
    }

    @Override
    public void report() {
        if (GAUGES.isEmpty() || !SqlJob.Clock.aligned()) {
            return;
        }
        long now = SqlJob.Clock.now();
        synchronized (LOCK) {
            if (nextSampleMs != Long.MIN_VALUE && now < nextSampleMs) {
                return;
            }
            nextSampleMs = now + sampleIntervalMs;
        }
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
        synchronized (LOCK) {
            ObjectNode s = samples.addObject();
            s.put("clock_ms", now);
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
