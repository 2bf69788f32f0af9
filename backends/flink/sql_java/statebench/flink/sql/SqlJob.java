package statebench.flink.sql;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.checkpoint.AbstractCheckpointStats;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.checkpoint.SubtaskStateStats;
import org.apache.flink.runtime.checkpoint.TaskStateStats;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.AccessExecutionJobVertex;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.Collector;

import java.io.File;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The operator's query as a real Flink SQL job over a workload's Nexmark events.
 *
 * <p>Why: statebench emulates Flink's operators (their state accesses) on its own lanes; this
 * program runs the query itself, so the emulation's peak state and cleanup can be checked
 * against the engine. Per job, on a local MiniCluster (one per invocation, the jobs one after
 * the other), from the Table API: a filesystem CSV table over the events file that
 * backends/flink/sql_job.py wrote, a paced event-time column, the query of the job's kind
 * (Nexmark's q18 dedup, q20 join, q7-shaped tumbling and q5-shaped HOP windows, q11's SESSION
 * windows, an interval join, q19's Top-N, a group aggregation) turned into a changelog stream
 * counted by a sink function, {@code table.exec.state.ttl}, Flink's periodic checkpoints into
 * a real folder, on HashMapStateBackend or EmbeddedRocksDBStateBackend.
 *
 * <p>Time. {@link Pace} releases each record once {@code start + (now - origin) * speedup >=
 * ts} (as statebench's ProcessingTime runs, workloads/run/pacing.py). The keyed backends'
 * TtlTimeProvider ({@link PacedBackendFactory}; the RocksDB compaction filter reads it too) is
 * the job's {@code ttl_clock}: {@code paced}, that same clock; {@code event}, the records' time
 * the keyed operator has reached (its input watermark, one per record, with the source held
 * in {@link Lockstep}), so the TTL expires what the emulation's EventTime TTL expires whatever
 * the machine's load. Window and interval-join state is cleaned by event-time timers
 * (watermarks), not by the TTL.
 *
 * <p>State measures: Flink's checkpoint statistics (full and checkpointed size, durations) per
 * checkpoint, and, on RocksDB, the native properties of every column family summed (estimate-
 * num-keys, live SST bytes, memtable bytes) sampled by {@link StateReporter}: under the event
 * clock at the emulation's sample times ({@link EventSamples}), else on the paced clock.
 * Throughput: the keyed task's input records over its busy time (Flink's task metrics, kept by
 * the same reporter) and the paced source's release rate; latency: per output row, in the sink.
 *
 * <p>Usage: {@code java -cp <classes:pyflink/lib/*> statebench.flink.sql.SqlJob REQUEST.json};
 * prints one JSON object (a list of job reports) on stdout. Errors: one line on stderr
 * ("statebench sql job: ..."), exit status 2 for a bad request, 1 for a failed job.
 */
public final class SqlJob {
    /** The job configuration key naming the inner backend of {@link PacedBackendFactory}. */
    static final String INNER_BACKEND = "statebench.sql.backend";
    /** The job configuration keys of the keyed backends' TTL clock: {@code paced} or
     *  {@code event} ({@link PacedBackendFactory}), and the event clock's offset past the
     *  watermark (the source's bound + 1). */
    static final String TTL_CLOCK = "statebench.sql.ttl-clock";
    static final String TTL_CLOCK_OFFSET = "statebench.sql.ttl-clock-offset-ms";
    static final ObjectMapper JSON = new ObjectMapper();
    static final List<String> KINDS = Arrays.asList("dedup", "regular_join", "tumbling_window",
            "sliding_window", "group_agg", "interval_join", "topn", "session_window");
    /** RocksDB properties sampled (Flink's state.backend.rocksdb.metrics.* switches). */
    static final String[] ROCKSDB_PROPERTIES = {"estimate-num-keys", "estimate-live-data-size",
        "live-sst-files-size", "total-sst-files-size", "cur-size-all-mem-tables"};

    private SqlJob() {
    }

    /** Bad input: one line, exit status 2. */
    static final class UsageError extends Exception {
        private static final long serialVersionUID = 1L;

        UsageError(String message) {
            super(message);
        }
    }

    // --------------------------------------------------------------------------------------
    // One job's settings
    // --------------------------------------------------------------------------------------

    /** One job of the request (field names as backends/flink/sql_job.py writes them). */
    static final class Job {
        String events;
        long count;
        String kind;
        String backend;
        String checkpointDir;
        long checkpointIntervalMs;
        boolean incremental;
        long ttlMs;
        int parallelism;
        double speedup;
        long startMs;
        long outOfOrdernessMs;
        long windowMs;
        long slideMs;
        long gapMs;
        long lowerMs;
        long upperMs;
        int topN;
        int category;
        String groupBy;
        String agg;
        long sampleIntervalMs;
        long queryTime;
        boolean collectOutputs;
        String ttlClock;
        /** Added to the event time (not to ts, which the outputs carry): the event clock's
         *  records all get a watermark ({@link #shift}). */
        long shiftMs;
        /** Under the event clock: the records' times before which a checkpoint is taken (the
         *  emulation's barriers, workloads/run/barriers.py); empty: periodic checkpoints. */
        long[] checkpointTimesMs = new long[0];
        /** Under the event clock: the records' times before which the state is sampled (the
         *  emulation's sample barriers); empty: samples on the paced clock. */
        long[] sampleTimesMs = new long[0];
        Map<String, String> conf = new java.util.LinkedHashMap<>();

        /** Whether the keyed backends' TTL clock is the records' time (the lockstep, and the
         *  checkpoints and samples placed at the emulation's times, follow from it). */
        boolean eventClock() {
            return ttlClock.equals("event");
        }

        static Job of(JsonNode n) throws UsageError {
            Job j = new Job();
            j.events = text(n, "events");
            j.count = number(n, "count");
            j.kind = text(n, "kind");
            j.backend = text(n, "backend");
            j.checkpointDir = text(n, "checkpoint_dir");
            j.checkpointIntervalMs = number(n, "checkpoint_interval_ms");
            j.incremental = n.path("incremental").asBoolean(false);
            j.ttlMs = number(n, "ttl_ms");
            j.parallelism = (int) number(n, "parallelism");
            j.speedup = n.path("speedup").asDouble(1.0);
            j.startMs = number(n, "start_ms");
            j.outOfOrdernessMs = number(n, "out_of_orderness_ms");
            j.windowMs = number(n, "window_ms");
            j.slideMs = n.path("slide_ms").asLong(j.windowMs);
            j.gapMs = n.path("gap_ms").asLong(1000L);
            j.lowerMs = n.path("lower_ms").asLong(0L);
            j.upperMs = n.path("upper_ms").asLong(0L);
            j.topN = n.path("top_n").asInt(1);
            j.category = (int) number(n, "category");
            j.groupBy = text(n, "group_by");
            j.agg = text(n, "agg");
            j.sampleIntervalMs = number(n, "sample_interval_ms");
            j.queryTime = n.path("query_time_after_num_entries").asLong(1000L);
            j.collectOutputs = n.path("collect_outputs").asBoolean(false);
            j.ttlClock = n.path("ttl_clock").asText("paced");
            if (!j.ttlClock.equals("paced") && !j.ttlClock.equals("event")) {
                throw new UsageError("ttl_clock must be paced or event, got '" + j.ttlClock + "'");
            }
            j.shiftMs = j.eventClock() ? shift(j.windowMs, j.outOfOrdernessMs) : 0;
            j.checkpointTimesMs = times(n, "checkpoint_times_ms");
            j.sampleTimesMs = times(n, "sample_times_ms");
            JsonNode conf = n.path("conf");
            if (conf.isObject()) {
                conf.fields().forEachRemaining(e -> j.conf.put(e.getKey(), e.getValue().asText()));
            }
            if (!KINDS.contains(j.kind)) {
                throw new UsageError("unknown query kind '" + j.kind + "'; expected one of " + KINDS);
            }
            if (!Arrays.asList("auction", "bidder", "category").contains(j.groupBy)
                    || (j.groupBy.equals("category") && !j.kind.equals("group_agg"))) {
                throw new UsageError("group_by must be auction or bidder (or category for "
                        + "group_agg), got '" + j.groupBy + "'");
            }
            if (!Arrays.asList("max", "sum", "count").contains(j.agg)) {
                throw new UsageError("agg must be max, sum or count, got '" + j.agg + "'");
            }
            if (!j.backend.equals("hashmap") && !j.backend.equals("rocksdb")) {
                throw new UsageError("backend must be hashmap or rocksdb, got '" + j.backend + "'");
            }
            if (!new File(j.events).isFile()) {
                throw new UsageError("events file " + j.events + " not found");
            }
            if (j.count < 1 || j.parallelism < 1 || j.checkpointIntervalMs < 10 || j.ttlMs < 0
                    || j.windowMs < 1 || j.sampleIntervalMs < 1 || !(j.speedup > 0)) {
                throw new UsageError("need count >= 1, parallelism >= 1, checkpoint_interval_ms >= "
                        + "10, ttl_ms >= 0, window_ms >= 1, sample_interval_ms >= 1, speedup > 0");
            }
            if (j.slideMs < 1 || (j.kind.equals("sliding_window") && j.windowMs % j.slideMs != 0)
                    || j.gapMs < 1 || j.topN < 1 || j.lowerMs > j.upperMs) {
                throw new UsageError("need slide_ms >= 1 dividing window_ms, gap_ms >= 1, "
                        + "top_n >= 1 and lower_ms <= upper_ms");
            }
            return j;
        }

        /** An optional array of times (ms), ascending; empty when absent. */
        private static long[] times(JsonNode n, String name) throws UsageError {
            JsonNode times = n.path(name);
            if (times.isMissingNode() || times.isNull()) {
                return new long[0];
            }
            if (!times.isArray()) {
                throw new UsageError("job field '" + name + "' must be a list of integers");
            }
            long[] out = new long[times.size()];
            for (int i = 0; i < out.length; i++) {
                if (!times.get(i).isIntegralNumber() || (i > 0 && times.get(i).asLong() < out[i - 1])) {
                    throw new UsageError("job field '" + name + "' must be ascending integers");
                }
                out[i] = times.get(i).asLong();
            }
            return out;
        }

        private static String text(JsonNode n, String name) throws UsageError {
            JsonNode v = n.get(name);
            if (v == null || !v.isTextual()) {
                throw new UsageError("job field '" + name + "' (text) is missing");
            }
            return v.asText();
        }

        private static long number(JsonNode n, String name) throws UsageError {
            JsonNode v = n.get(name);
            if (v == null || !v.isIntegralNumber()) {
                throw new UsageError("job field '" + name + "' (integer) is missing");
            }
            return v.asLong();
        }
    }

    // --------------------------------------------------------------------------------------
    // The query of each kind (Nexmark's, over the events' columns)
    // --------------------------------------------------------------------------------------

    /** An interval literal of {@code ms} milliseconds (Flink's day-time intervals take the
     *  default precisions only: hours up to 99, as HOUR TO SECOND with milliseconds). */
    static String interval(long ms) throws UsageError {
        if (ms < 1 || ms >= 100L * 3_600_000L) {
            throw new UsageError("an interval of " + ms + " ms: the SQL job takes 1 ms to 99 h");
        }
        return String.format(Locale.ROOT, "INTERVAL '%d:%02d:%02d.%03d' HOUR TO SECOND",
                ms / 3_600_000L, ms / 60_000L % 60, ms / 1000 % 60, ms % 1000);
    }

    /**
     * The event clock's shift of the event time: the least multiple of the window above the
     * watermark's offset (bound + 1). Why: {@code WatermarkAssignerOperator} emits a
     * watermark only past its last, which starts at 0, so the records of a run's first
     * {@code bound + 1} ms (from ts 0) had none, and the event clock and the lockstep had
     * nothing to go by there. A multiple of the window keeps windows (and HOP's slices, which
     * divide it) aligned as without it; the queries take it off the window bounds they emit,
     * and ts, which the outputs carry, is never shifted. The other operators read time
     * differences, except {@code TimeIntervalJoin}, whose 0 means "before every row" (its
     * first expiration times, the operator time's floor): the shift keeps every row above it,
     * as on epoch times, and the emulation's sentinel does the same
     * (workloads/operators/interval_join.py).
     */
    static long shift(long windowMs, long boundMs) {
        long need = boundMs + 2;
        return (need + windowMs - 1) / windowMs * windowMs;
    }

    /** The source table: the CSV events with a paced rowtime column and its watermark, the
     *  bounded-out-of-orderness one of DataStream's WatermarkStrategy ({@code max ts - bound -
     *  1}): a record within the bound is never late, so which records a window drops does not
     *  depend on when the periodic watermark was emitted. */
    static String sourceDdl(Job j) {
        return "CREATE TEMPORARY TABLE events (\n"
                + "  event_type TINYINT, ts BIGINT, person_id BIGINT, auction_id BIGINT,\n"
                + "  price BIGINT, category INT, expires_ms BIGINT, city INT,\n"
                + "  event_time AS TO_TIMESTAMP_LTZ(PACE(ts) + " + j.shiftMs + ", 3),\n"
                + "  WATERMARK FOR event_time AS TO_TIMESTAMP_LTZ(ts - "
                + (j.outOfOrdernessMs + 1 - j.shiftMs)
                + ", 3)\n"
                + ") WITH ('connector' = 'filesystem', 'path' = "
                + sqlString(localPath(j.events)) + ", 'format' = 'csv')";
    }

    /** A local file as the text Flink's {@code Path(String)} reads: {@code file://} and the
     *  absolute path, unquoted. Not {@code File.toURI()}'s text: Path(String) quotes its
     *  escapes again, so a folder with a space, '#' or '%' became another folder
     *  ({@code sp%20ace}), where the source found no file and waited and the checkpoints went.
     *  Path quotes the raw path once itself; checkpoint storage needs the scheme. */
    static String localPath(String path) {
        return "file://" + new File(path).getAbsolutePath();
    }

    /** A SQL string literal of {@code text} (quotes doubled). */
    static String sqlString(String text) {
        return "'" + text.replace("'", "''") + "'";
    }

    /** The views every query reads: the bids and the auctions of the events. */
    static final String[] VIEWS = {
        "CREATE TEMPORARY VIEW bid AS SELECT auction_id AS auction, person_id AS bidder, price, "
            + "ts, event_time FROM events WHERE event_type = 2",
        "CREATE TEMPORARY VIEW auction AS SELECT auction_id AS id, person_id AS seller, category, "
            + "price AS initial_bid, expires_ms, ts, event_time FROM events WHERE event_type = 1",
    };

    /** {@code time} moved by {@code ms} (either sign) as SQL: the interval join's bounds. */
    static String shifted(String time, long ms) throws UsageError {
        if (ms == 0) {
            return time;
        }
        return time + (ms > 0 ? " + " : " - ") + interval(Math.abs(ms));
    }

    /** The query; every kind's output has a BIGINT column {@code out_ts}: the event time the
     *  output row stands for (its bid's, or its window's end), for the latency. */
    static String query(Job j) throws UsageError {
        switch (j.kind) {
            case "dedup": // Nexmark q18: the last bid of each bidder on each auction
                return "SELECT auction, bidder, price, ts AS out_ts FROM (\n"
                        + "  SELECT auction, bidder, price, ts, ROW_NUMBER() OVER (PARTITION BY "
                        + "bidder, auction ORDER BY event_time DESC) AS rn FROM bid)\nWHERE rn = 1";
            case "regular_join": // Nexmark q20: bids joined with their auction (of one category)
                return "SELECT B.auction, B.bidder, B.price, A.seller, A.category, B.ts AS out_ts\n"
                        + "FROM (SELECT auction, bidder, price, ts FROM bid) AS B\n"
                        + "JOIN (SELECT id, seller, category FROM auction) AS A\n"
                        + "ON B.auction = A.id"
                        + (j.category >= 0 ? " WHERE A.category = " + j.category : "");
            case "tumbling_window": // q7's window: the aggregate of each key's bids per window
                // the row as the emulation emits it (key, window end, aggregate); the window end
                // is the time the row stands for
                return windowAggregate(j, "TUMBLE(TABLE bid, DESCRIPTOR(event_time), "
                        + interval(j.windowMs) + ")", false);
            case "sliding_window": // q5's window: HOP, a bid in window_ms / slide_ms windows
                return windowAggregate(j, "HOP(TABLE bid, DESCRIPTOR(event_time), "
                        + interval(j.slideMs) + ", " + interval(j.windowMs) + ")", false);
            case "session_window": // q11: a session per key, closed by a gap without bids
                return windowAggregate(j, "SESSION(TABLE bid PARTITION BY " + j.groupBy
                        + ", DESCRIPTOR(event_time), " + interval(j.gapMs) + ")", true);
            case "interval_join": // bids joined with their auction within time bounds
                // bid.ts - auction.ts in lower_ms..upper_ms (the emulation's knobs); the row is
                // the emulation's (bid's auction, bidder, price, ts, auction's seller, ts); it
                // stands for the later of the two, the record that made the pair
                return "SELECT B.auction, B.bidder, B.price, B.ts AS bid_ts, A.seller, "
                        + "A.ts AS auction_ts, GREATEST(B.ts, A.ts) AS out_ts\n"
                        + "FROM bid AS B JOIN auction AS A ON B.auction = A.id\n"
                        + "AND B.event_time BETWEEN " + shifted("A.event_time", j.lowerMs)
                        + " AND " + shifted("A.event_time", j.upperMs)
                        + (j.category >= 0 ? "\nWHERE A.category = " + j.category : "");
            case "topn": // Nexmark q19: the top_n highest bids per key, without the rank number
                return "SELECT auction, bidder, price, ts AS out_ts FROM (\n"
                        + "  SELECT auction, bidder, price, ts, ROW_NUMBER() OVER (PARTITION BY "
                        + j.groupBy + " ORDER BY price DESC) AS rn FROM bid)\nWHERE rn <= "
                        + j.topN;
            case "group_agg": // a continuous aggregation per key (auctions' per category)
                if (j.groupBy.equals("category")) {
                    return "SELECT category, " + aggregate(j, "initial_bid")
                            + " AS agg, MAX(ts) AS out_ts FROM auction GROUP BY category";
                }
                return "SELECT " + j.groupBy + ", " + aggregate(j, "price")
                        + " AS agg, MAX(ts) AS out_ts FROM bid GROUP BY " + j.groupBy;
            default:
                throw new IllegalArgumentException(j.kind);
        }
    }

    /** The spec's aggregate of the bids' price per {@code group_by} per window of the window
     *  table function {@code tvf}, one row per fired window: (key, [window start,] window end,
     *  aggregate, out_ts = window end), the times in epoch ms, as the emulation emits it. */
    static String windowAggregate(Job j, String tvf, boolean withStart) {
        String shift = " - " + j.shiftMs;
        return "SELECT " + j.groupBy
                + (withStart ? ", EPOCH_MS(window_start)" + shift + " AS start_ms" : "")
                + ", EPOCH_MS(window_end)" + shift + " AS end_ms, " + aggregate(j, "price")
                + " AS agg, EPOCH_MS(window_end)" + shift + " AS out_ts\nFROM TABLE(" + tvf
                + ")\nGROUP BY "
                + j.groupBy + ", window_start, window_end";
    }

    /** The spec's aggregate (max | sum | count) of {@code column}. */
    static String aggregate(Job j, String column) {
        return j.agg.equals("count") ? "COUNT(*)" : j.agg.toUpperCase(Locale.ROOT) + "(" + column + ")";
    }

    // --------------------------------------------------------------------------------------
    // The run
    // --------------------------------------------------------------------------------------

    public static void main(String[] argv) {
        PrintStream out = System.out;
        try {
            if (argv.length != 1) {
                throw new UsageError("usage: SqlJob REQUEST.json");
            }
            File request = new File(argv[0]);
            if (!request.isFile()) {
                throw new UsageError("request file " + argv[0] + " not found");
            }
            JsonNode root;
            try {
                root = JSON.readTree(request);
            } catch (java.io.IOException e) {
                throw new UsageError("request file " + argv[0] + " is not JSON: " + e.getMessage());
            }
            JsonNode jobs = root.path("jobs");
            if (!jobs.isArray() || jobs.size() == 0) {
                throw new UsageError("the request holds no jobs");
            }
            List<Job> parsed = new ArrayList<>();
            for (JsonNode n : jobs) {
                parsed.add(Job.of(n));
            }
            ArrayNode reports = runAll(parsed);
            ObjectNode result = JSON.createObjectNode();
            result.set("jobs", reports);
            out.println(JSON.writeValueAsString(result));
            out.flush();
            System.exit(0);
        } catch (UsageError e) {
            System.err.println("statebench sql job: " + e.getMessage());
            System.exit(2);
        } catch (Throwable t) {
            System.err.println("statebench sql job failed: " + rootCause(t));
            t.printStackTrace(System.err);
            System.exit(1);
        }
    }

    private static String rootCause(Throwable t) {
        Throwable c = t;
        while (c.getCause() != null && c.getCause() != c) {
            c = c.getCause();
        }
        return c == t ? t.toString() : t + " (caused by " + c + ")";
    }

    static ArrayNode runAll(List<Job> jobs) throws Exception {
        int slots = 1;
        for (Job j : jobs) {
            slots = Math.max(slots, j.parallelism);
        }
        Configuration cluster = new Configuration();
        cluster.setString("rest.bind-port", "0");
        cluster.setString("metrics.reporter.sb.factory.class",
                StateReporter.Factory.class.getName());
        cluster.setString("metrics.reporter.sb.interval", "50 ms");
        // every checkpoint of a job in its statistics, not the last 10
        cluster.setString("web.checkpoints.history", "100000");
        cluster.setString("taskmanager.memory.managed.size", "128m");
        MiniClusterConfiguration mc = new MiniClusterConfiguration.Builder()
                .setConfiguration(cluster).setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(slots).withRandomPorts().build();
        ArrayNode reports = JSON.createArrayNode();
        try (MiniCluster mini = new MiniCluster(mc)) {
            mini.start();
            for (Job j : jobs) {
                reports.add(run(mini, j));
            }
        }
        return reports;
    }

    static Configuration jobConfiguration(Job j) {
        Configuration conf = new Configuration();
        conf.setString("state.backend.type", PacedBackendFactory.class.getName());
        conf.setString(INNER_BACKEND, j.backend);
        if (EventCheckpoints.placed(j)) {
            // checkpoints at the records' times (EventCheckpoints), none on the wall clock: no
            // periodic one within any run, and no final one the finished tasks wait for
            // (a source subtask with no split finishes at once: checkpoints after tasks finish
            // stay on, and the job's end gets its final one from EventCheckpoints.finish).
            // The coordinator still takes one checkpoint as the job starts (gone with a minimum
            // pause as long as the interval): unplaced, not reported, it warms the checkpoint
            // path, so that the first placed one's trigger travels as fast as the later ones
            // (without it q7's single placed checkpoint held 5-15% more state, by the load),
            // and it is the checkpoint the source subtask without a split finishes with
            conf.setString("execution.checkpointing.interval", "87600 h");
        } else {
            conf.setString("execution.checkpointing.interval", j.checkpointIntervalMs + " ms");
        }
        conf.setString("execution.checkpointing.storage", "filesystem");
        conf.setString("execution.checkpointing.dir", localPath(j.checkpointDir));
        conf.setString("execution.checkpointing.incremental", Boolean.toString(j.incremental));
        conf.setString("parallelism.default", Integer.toString(j.parallelism));
        conf.setString(TTL_CLOCK, j.ttlClock);
        if (j.eventClock()) {
            // a watermark after every record that advances it (no periodic one): the event
            // clock reads the keyed task's input watermark (PacedBackendFactory.EventClock)
            conf.setString("pipeline.auto-watermark-interval", "0 ms");
            // every record and watermark leaves its buffer at once: a two-input operator (a
            // join) then reads both inputs about in step, so the minimum of their watermarks
            // (the task's) is not a buffer's worth of records behind the one it processes
            conf.setString("execution.buffer-timeout.interval", "0 ms");
            conf.setString(TTL_CLOCK_OFFSET, Long.toString(j.outOfOrdernessMs + 1 - j.shiftMs));
        } else {
            conf.setString("pipeline.auto-watermark-interval", "20 ms");
        }
        conf.setString("table.exec.state.ttl", j.ttlMs + " ms");
        conf.setString("table.exec.resource.default-parallelism", Integer.toString(j.parallelism));
        // one keyed operator per query, as the emulation has (no local pre-aggregation)
        conf.setString("table.optimizer.agg-phase-strategy", "ONE_PHASE");
        conf.setString("table.exec.mini-batch.enabled", "false");
        conf.setString("table.local-time-zone", "UTC");
        conf.setString("state.backend.rocksdb.memory.managed", "false");
        conf.setString("state.backend.rocksdb.compaction.filter.query-time-after-num-entries",
                Long.toString(j.queryTime));
        for (String p : ROCKSDB_PROPERTIES) {
            conf.setString("state.backend.rocksdb.metrics." + p, "true");
        }
        for (Map.Entry<String, String> e : j.conf.entrySet()) {
            conf.setString(e.getKey(), e.getValue());
            if (e.getKey().equals(Level0Trigger.KEY)) {
                conf.setString("state.backend.rocksdb.options-factory",
                        Level0Trigger.class.getName());
            }
        }
        return conf;
    }

    static ObjectNode run(MiniCluster mini, Job j) throws Exception {
        Clock.reset(j.speedup, j.startMs);
        StateReporter.reset(j.sampleIntervalMs);
        Counter.reset();
        Lockstep.reset(j.eventClock(), j.outOfOrdernessMs + 1 - j.shiftMs);
        Configuration conf = jobConfiguration(j);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(j.parallelism);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env,
                EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
        tEnv.createTemporarySystemFunction("PACE", new Pace());
        tEnv.createTemporarySystemFunction("EPOCH_MS", new EpochMs());
        tEnv.executeSql(sourceDdl(j));
        for (String view : VIEWS) {
            tEnv.executeSql(view);
        }
        String sql = query(j);
        Table table = tEnv.sqlQuery(sql);
        DataStream<Row> changes = tEnv.toChangelogStream(table);
        changes.process(new Counter(j.speedup, j.collectOutputs)).name("statebench-count")
                .sinkTo(new DiscardingSink<>()).name("discard");
        JobGraph graph = env.getStreamGraph().getJobGraph();
        String plan = tEnv.explainSql(sql);
        long submitted = System.nanoTime();
        Pace.total = j.count;
        EventCheckpoints.reset(mini, graph.getJobID(), EventCheckpoints.placed(j)
                ? j.checkpointTimesMs : new long[0]);
        EventSamples.reset(j.eventClock() ? j.sampleTimesMs : new long[0]);
        JobID id = mini.submitJob(graph).get().getJobID();
        java.util.concurrent.CompletableFuture<JobResult> ending = mini.requestJobResult(id);
        if (EventCheckpoints.placed(j)) {
            EventCheckpoints.finish(ending);
        }
        JobResult result = ending.get();
        long jobNanos = System.nanoTime() - submitted;
        if (!result.isSuccess()) {
            Throwable cause = result.getSerializedThrowable()
                    .map(s -> (Throwable) s.deserializeError(SqlJob.class.getClassLoader()))
                    .orElse(new IllegalStateException("the job failed"));
            throw new IllegalStateException("the " + j.kind + " job failed: " + rootCause(cause),
                    cause);
        }
        AccessExecutionGraph archived = mini.getArchivedExecutionGraph(id).get();
        return report(j, archived, jobNanos, plan);
    }

    // --------------------------------------------------------------------------------------
    // The report
    // --------------------------------------------------------------------------------------

    static ObjectNode report(Job j, AccessExecutionGraph g, long jobNanos, String plan) {
        ObjectNode r = JSON.createObjectNode();
        r.put("kind", j.kind);
        r.put("backend", j.backend);
        r.put("state_backend", g.getStateBackendName().orElse("?"));
        r.put("parallelism", j.parallelism);
        r.put("ttl_ms", j.ttlMs);
        r.put("speedup", j.speedup);
        r.put("job_s", jobNanos / 1e9);
        Pace.Stats pace = Pace.stats();
        r.put("records", pace.released);
        r.put("released_wall_s", pace.wallSeconds());
        r.put("records_per_s", pace.wallSeconds() > 0 ? pace.released / pace.wallSeconds() : 0.0);
        r.put("late_records", pace.late);
        long keyedIn = 0;
        double busyRate = 0;
        long busyMs = 0;
        for (long[] v : StateReporter.keyedTask().values()) {
            keyedIn += v[0];
            busyMs = Math.max(busyMs, v[1]);
            busyRate += v[1] > 0 ? v[0] / (v[1] / 1000.0) : 0.0;
        }
        r.put("keyed_records_in", keyedIn);
        r.put("keyed_busy_ms", busyMs);
        r.put("keyed_records_per_busy_s", busyRate);
        r.put("schedule_lag_max_ms", pace.maxLagMs);
        Counter.Totals totals = Counter.totals();
        ObjectNode outputs = r.putObject("outputs");
        for (RowKind k : RowKind.values()) {
            outputs.put(k.shortString(), totals.byKind[k.ordinal()]);
        }
        if (j.collectOutputs) {
            ArrayNode hashes = r.putArray("output_hashes");
            for (long x : totals.outputHashes) {
                hashes.add(x);
            }
        }
        ObjectNode latency = r.putObject("latency_us");
        long[] lat = totals.latencyUs;
        if (lat.length > 0) {
            Arrays.sort(lat);
            latency.put("p50", lat[percentileIndex(lat.length, 0.50)]);
            latency.put("p99", lat[percentileIndex(lat.length, 0.99)]);
            latency.put("p999", lat[percentileIndex(lat.length, 0.999)]);
            latency.put("max", lat[lat.length - 1]);
        }
        r.set("checkpoints", checkpoints(j, g, pace));
        r.put("placed_checkpoints_failed", EventCheckpoints.failed());
        r.put("placed_checkpoints_retried", EventCheckpoints.retried());
        r.set("state_samples", StateReporter.samples());
        ArrayNode vertices = r.putArray("vertices");
        for (AccessExecutionJobVertex v : g.getVerticesTopologically()) {
            vertices.add(v.getName());
        }
        r.put("plan", plan);
        return r;
    }

    static int percentileIndex(int n, double q) {
        return Math.min(n - 1, Math.max(0, (int) Math.ceil(q * n) - 1));
    }

    static ArrayNode checkpoints(Job j, AccessExecutionGraph g, Pace.Stats pace) {
        CheckpointStatsSnapshot stats = g.getCheckpointStatsSnapshot();
        List<AbstractCheckpointStats> history = new ArrayList<>(stats.getHistory().getCheckpoints());
        history.sort((x, y) -> Long.compare(x.getCheckpointId(), y.getCheckpointId()));
        ArrayNode rows = JSON.createArrayNode();
        for (AbstractCheckpointStats c : history) {
            if (EventCheckpoints.placed(j) && EventCheckpoints.timeOf(c.getCheckpointId()) == null) {
                continue;  // a checkpoint for the job's end (EventCheckpoints.finish)
            }
            long sync = 0;
            long async = 0;
            long align = 0;
            for (AccessExecutionJobVertex v : g.getVerticesTopologically()) {
                TaskStateStats t = c.getTaskStateStats(v.getJobVertexId());
                if (t == null) {
                    continue;
                }
                for (SubtaskStateStats st : t.getSubtaskStats()) {
                    if (st != null) {
                        sync = Math.max(sync, st.getSyncCheckpointDuration());
                        async = Math.max(async, st.getAsyncCheckpointDuration());
                        align = Math.max(align, st.getAlignmentDuration());
                    }
                }
            }
            ObjectNode row = rows.addObject();
            row.put("id", c.getCheckpointId());
            row.put("status", c.getStatus().toString());
            Long placedAt = EventCheckpoints.timeOf(c.getCheckpointId());
            row.put("clock_ms", placedAt != null ? placedAt : Clock.atWall(c.getTriggerTimestamp()));
            row.put("state_bytes", c.getStateSize());
            row.put("checkpointed_bytes", c.getCheckpointedSize());
            row.put("end_to_end_ms", c.getEndToEndDuration());
            row.put("sync_ms", sync);
            row.put("async_ms", async);
            row.put("alignment_ms", align);
        }
        return rows;
    }

    // --------------------------------------------------------------------------------------
    // The paced clock, its UDF and the sink's counts
    // --------------------------------------------------------------------------------------

    /** The job's paced clock: {@code start + (now - origin) * speedup}, aligned (origin = now)
     *  when the first record is released. One per JVM: the MiniCluster runs in this one. */
    static final class Clock {
        private static volatile double speedup = 1.0;
        private static volatile long startMs;
        private static volatile long originNanos = Long.MIN_VALUE;
        private static volatile long originWallMs;

        static synchronized void reset(double s, long start) {
            speedup = s;
            startMs = start;
            originNanos = Long.MIN_VALUE;
        }

        static synchronized void align() {
            if (originNanos == Long.MIN_VALUE) {
                originNanos = System.nanoTime();
                originWallMs = System.currentTimeMillis();
            }
        }

        /** Clock ms now ({@code start} until the first record is released). */
        static long now() {
            long origin = originNanos;
            if (origin == Long.MIN_VALUE) {
                return startMs;
            }
            return startMs + (long) ((System.nanoTime() - origin) / 1e6 * speedup);
        }

        /** The clock's time at a wall-clock instant (epoch ms), e.g. a checkpoint's trigger. */
        static long atWall(long wallMs) {
            if (originNanos == Long.MIN_VALUE) {
                return startMs;
            }
            return startMs + (long) ((wallMs - originWallMs) * speedup);
        }

        static double speedup() {
            return speedup;
        }

        /** The clock's start (the first record's time): where the event clock starts too. */
        static long start() {
            return startMs;
        }

        static boolean aligned() {
            return originNanos != Long.MIN_VALUE;
        }
    }

    /**
     * Holds the source back until the keyed tasks have taken in every record released before:
     * with the event TTL clock, a keyed task's TTL time is its input watermark, the minimum over
     * its inputs, and a task with two inputs (a join) that falls behind reads them out of step
     * (its queues hold two elements per bid on one input, one per event on the other), so the
     * watermark of the input ahead would stand for the records of the other. Waiting here
     * keeps the records in flight to one event's, as the emulation, which processes them in
     * order, has them. The wait binds only while the job is behind its paced clock.
     */
    static final class Lockstep {
        /** Whether the source waits (the event TTL clock), and the watermark's offset below
         *  ts (bound + 1 - the event time's shift). */
        private static volatile boolean enabled;
        private static volatile long offsetMs;
        private static volatile long releasedTs = Long.MIN_VALUE;
        private static volatile long belowTs = Long.MIN_VALUE;
        /** At most this long a record waits (a task whose gauge never moves stalls no job). */
        private static final long MAX_WAIT_NANOS = 1_000_000_000L;

        static void reset(boolean on, long offset) {
            enabled = on;
            offsetMs = offset;
            releasedTs = Long.MIN_VALUE;
            belowTs = Long.MIN_VALUE;
        }

        /** Waits until the keyed tasks' input watermark stands for every record released
         *  before {@code ts}'s: the watermark after the last earlier time released. A query
         *  reading the events twice (a join) has a PACE in each branch, one after the other
         *  for the same record: the second call of a time waits for the time below it only,
         *  as its own branch's watermark of that time is not out yet. */
        static void await(long ts) {
            if (!enabled) {
                return;
            }
            long offset = offsetMs;
            long released = releasedTs;
            long before = ts > released ? released : belowTs;
            // none at or below 0: WatermarkAssignerOperator emits one only past its last,
            // which starts at 0 (the shift puts every record's past it)
            long need = before == Long.MIN_VALUE ? 0 : before - offset;
            if (need > 0) {
                long deadline = System.nanoTime() + MAX_WAIT_NANOS;
                while (StateReporter.keyedInputWatermark() < need
                        && System.nanoTime() < deadline) {
                    java.util.concurrent.locks.LockSupport.parkNanos(20_000L);
                }
            }
            synchronized (Lockstep.class) {
                if (ts > releasedTs) {
                    belowTs = releasedTs;
                    releasedTs = ts;
                }
            }
        }
    }

    /**
     * Under the event clock, the job's checkpoints at the records' times the emulation takes
     * its own (before the first record at or after each of them: workloads/run/barriers.py),
     * not on the wall clock: a checkpoint the wall clock triggers holds the state of whatever
     * record the job had reached by then, which moves with the machine's load (q19 at 0.08x of
     * the emulation's peak beside other jobs, 1.24x without). The source triggers each one
     * when it is about to release the first record at or past its time, once every record
     * before it has been taken in (after {@link Lockstep#await}); the barrier then follows
     * that record, or the few the source releases while the trigger travels.
     */
    static final class EventCheckpoints {
        private static volatile MiniCluster mini;
        private static volatile JobID job;
        private static volatile long[] times = new long[0];
        private static int next;
        private static int triggered;
        private static volatile boolean inputDone;
        private static final java.util.concurrent.atomic.AtomicInteger FAILED =
                new java.util.concurrent.atomic.AtomicInteger();
        private static final java.util.concurrent.atomic.AtomicInteger RETRIED =
                new java.util.concurrent.atomic.AtomicInteger();
        /** A declined placed checkpoint is triggered again this many times at most, this
         *  long apart ({@link #trigger}). */
        private static final int RETRIES = 20;
        private static final long RETRY_PAUSE_MS = 10L;
        /** At most this long a placed checkpoint waits for idle source subtasks to finish. */
        private static final long IDLE_WAIT_NANOS = 5_000_000_000L;
        private static volatile boolean idleSourcesFinished;
        /** At most this long the last record waits for the checkpoints in flight. */
        private static final long MAX_WAIT_NANOS = 60_000_000_000L;
        /** Checkpoint id -> the records' time it was placed at. */
        private static final Map<Long, Long> PLACED = new java.util.concurrent.ConcurrentHashMap<>();

        static boolean placed(Job j) {
            return j.eventClock() && j.checkpointTimesMs.length > 0;
        }

        static synchronized void reset(MiniCluster cluster, JobID id, long[] at) {
            mini = cluster;
            job = id;
            times = at.clone();
            next = 0;
            triggered = 0;
            inputDone = false;
            FAILED.set(0);
            RETRIED.set(0);
            idleSourcesFinished = false;
            PLACED.clear();
        }

        /** Before the record at {@code ts} leaves the source: trigger the checkpoints whose time
         *  it reached (one for several passed at once: they hold the same state). */
        static void before(long ts) {
            long[] at = times;
            if (at.length == 0) {
                return;
            }
            long placedAt;
            synchronized (EventCheckpoints.class) {
                if (next >= at.length || ts < at[next]) {
                    return;
                }
                placedAt = at[next];
                while (next < at.length && ts >= at[next]) {
                    next++;
                }
                triggered++;
            }
            awaitIdleSources();
            trigger(placedAt, 0);
        }

        /** Once a placed checkpoint has completed, waits (at most {@link #IDLE_WAIT_NANOS})
         *  until every source subtask that releases no records (no split: it finished its input
         *  at once, and finishes with the first checkpoint after that) has finished closing:
         *  a checkpoint triggered while one closes is declined ("task is closing"), and its
         *  retry would hold the records released until the subtask is gone, which moves with
         *  the machine's load. Before the first completes, no wait: that subtask waits for it,
         *  and its barrier may still have to pass this source's thread. */
        private static void awaitIdleSources() {
            if (idleSourcesFinished || PLACED.isEmpty()) {
                return;
            }
            long deadline = System.nanoTime() + IDLE_WAIT_NANOS;
            try {
                while (System.nanoTime() < deadline) {
                    AccessExecutionGraph g = mini.getExecutionGraph(job)
                            .get(1, java.util.concurrent.TimeUnit.SECONDS);
                    int running = 0;
                    for (AccessExecutionJobVertex v : g.getVerticesTopologically()) {
                        if (v.getName().startsWith("Source")) {
                            for (org.apache.flink.runtime.executiongraph.AccessExecutionVertex t
                                    : v.getTaskVertices()) {
                                if (t.getExecutionState()
                                        != org.apache.flink.runtime.execution.ExecutionState.FINISHED) {
                                    running++;
                                }
                            }
                        }
                    }
                    if (running <= Pace.releasing()) { // only those releasing records run
                        idleSourcesFinished = true;
                        return;
                    }
                    Thread.sleep(2);
                }
            } catch (Exception e) {
                // no graph (the job ending): trigger as before; a decline is retried
            }
        }

        /** Triggers the checkpoint placed at {@code placedAt}; a declined one again, at most
         *  {@link #RETRIES} times: the source subtask without a split finishes with the first
         *  checkpoint after its input ended (checkpoints after tasks finish), and one triggered
         *  while it closes is declined ("task is closing"). The retry's barrier follows the
         *  records released meanwhile (a few ms of them), which {@link #retried} counts. */
        private static void trigger(long placedAt, int attempt) {
            mini.triggerCheckpoint(job, org.apache.flink.core.execution.CheckpointType.CONFIGURED)
                    .whenComplete((id, error) -> {
                        if (error == null) {
                            PLACED.put(id, placedAt);
                        } else if (attempt < RETRIES && !inputDone) {
                            RETRIED.incrementAndGet();
                            java.util.concurrent.CompletableFuture.delayedExecutor(RETRY_PAUSE_MS,
                                    java.util.concurrent.TimeUnit.MILLISECONDS)
                                    .execute(() -> trigger(placedAt, attempt + 1));
                        } else {
                            FAILED.incrementAndGet();
                        }
                    });
        }

        /** Before the last record leaves: wait until every checkpoint triggered has completed
         *  or failed, so that no task finishes under one in flight (which Flink then declines;
         *  the emulation's checkpoints stop its task). Its barrier left the source long before,
         *  so the source's thread waiting here holds nothing the checkpoint needs. */
        static void awaitPlaced() throws InterruptedException {
            long deadline = System.nanoTime() + MAX_WAIT_NANOS;
            while (System.nanoTime() < deadline) {
                int done;
                synchronized (EventCheckpoints.class) {
                    done = triggered;
                }
                if (PLACED.size() + FAILED.get() >= done) {
                    break;
                }
                Thread.sleep(5);
            }
            inputDone = true;
        }

        /** Once the last record is out, checkpoints until the job ends: its finished tasks
         *  wait for one (Flink's checkpoints after tasks finish), which the wall clock no
         *  longer triggers. They hold no record's state and are not reported. */
        static void finish(java.util.concurrent.CompletableFuture<JobResult> ending)
                throws InterruptedException {
            while (!ending.isDone()) {
                if (inputDone) {
                    mini.triggerCheckpoint(job,
                            org.apache.flink.core.execution.CheckpointType.CONFIGURED);
                    Thread.sleep(200);
                } else {
                    Thread.sleep(20);
                }
            }
        }

        /** Checkpoints triggered that failed (declined, timed out) every time. */
        static int failed() {
            return FAILED.get();
        }

        /** Triggers of placed checkpoints again after a decline. */
        static int retried() {
            return RETRIED.get();
        }

        /** The records' time checkpoint {@code id} was placed at, or null (not placed). */
        static Long timeOf(long id) {
            return PLACED.get(id);
        }
    }

    /**
     * Under the event clock, the state's samples at the records' times the emulation samples
     * its own (its sample barriers: workloads/run/barriers.py), not on the paced clock: a
     * sample the clock takes holds whatever record the job had reached, which moves with the
     * machine's load (the window kinds' RocksDB estimates read 0.03x-0.08x of the emulation's
     * over runs of one spec). The source samples, on its own thread, before it releases the
     * first record at or past each time, once every record before it was taken in ({@link
     * Lockstep#await}); before that time's checkpoint is triggered (the emulation samples
     * after its synchronous checkpoint phase; the job's checkpoint runs on its own). Times past
     * the last record are sampled before it leaves: the emulation samples them once every
     * record is in, so they lack the last record's write.
     */
    static final class EventSamples {
        private static long[] times = new long[0];
        private static int next;

        static synchronized void reset(long[] at) {
            times = at.clone();
            next = 0;
        }

        /** Before the record at {@code ts} leaves the source: one sample per time it reached. */
        static synchronized void before(long ts) {
            while (next < times.length && ts >= times[next]) {
                StateReporter.sample(times[next]);
                next++;
            }
        }

        /** Before the last record leaves: the times still ahead. */
        static synchronized void rest() {
            before(Long.MAX_VALUE);
        }

        static synchronized boolean placed() {
            return times.length > 0;
        }
    }

    /** PACE(ts): waits until the paced clock reaches ts, then returns ts (non-deterministic, so
     *  the planner neither folds nor moves it). Runs in the source's chained calculation. */
    public static final class Pace extends org.apache.flink.table.functions.ScalarFunction {
        private static final long serialVersionUID = 1L;
        /** One Stats per instance: a query reading the events twice (the join's two sides)
         *  has a PACE in each branch; each branch's instance sees every record once. */
        private static final ConcurrentLinkedQueue<Stats> ALL = new ConcurrentLinkedQueue<>();
        /** The records the job's file holds: the last one waits for the placed checkpoints. */
        static volatile long total = Long.MAX_VALUE;
        private transient Stats stats;

        /** Release statistics of the job (one source reader releases the records). */
        static final class Stats {
            long released;
            long late;
            long maxLagMs;
            long firstNanos;
            long lastNanos;

            double wallSeconds() {
                return released > 1 ? (lastNanos - firstNanos) / 1e9 : 0.0;
            }
        }

        /** The statistics of the instance that released the most records. */
        static Stats stats() {
            Stats best = new Stats();
            for (Stats s : ALL) {
                synchronized (s) {
                    if (s.released >= best.released) {
                        best = new Stats();
                        best.released = s.released;
                        best.late = s.late;
                        best.maxLagMs = s.maxLagMs;
                        best.firstNanos = s.firstNanos;
                        best.lastNanos = s.lastNanos;
                    }
                }
            }
            return best;
        }

        /** The source subtasks releasing records (each has one instance, one split). */
        static int releasing() {
            int n = 0;
            for (Stats s : ALL) {
                synchronized (s) {
                    n += s.released > 0 ? 1 : 0;
                }
            }
            return n;
        }

        static void resetStats() {
            ALL.clear();
            Lockstep.reset(false, 0);
        }

        @Override
        public void open(org.apache.flink.table.functions.FunctionContext context) {
            // the clock itself is set up by the job (Clock.reset) before the job starts
            stats = new Stats();
            ALL.add(stats);
        }

        public Long eval(Long ts) throws InterruptedException {
            if (ts == null) {
                return null;
            }
            Clock.align();
            long now = Clock.now();
            while (now < ts) {
                double aheadRealMs = (ts - now) / Clock.speedup();
                Thread.sleep(Math.max(0L, Math.min(50L, (long) aheadRealMs)),
                        aheadRealMs < 1 ? (int) (aheadRealMs * 1e6) : 0);
                now = Clock.now();
            }
            Lockstep.await(ts);
            EventSamples.before(ts);
            EventCheckpoints.before(ts);
            long lag = now - ts;
            Stats s = stats;
            boolean last;
            synchronized (s) {
                long t = System.nanoTime();
                if (s.released == 0) {
                    s.firstNanos = t;
                }
                s.lastNanos = t;
                s.released++;
                last = s.released == total;
                if (lag > Clock.speedup()) {
                    s.late++;
                }
                s.maxLagMs = Math.max(s.maxLagMs, lag);
            }
            if (last) {
                EventSamples.rest();
                EventCheckpoints.awaitPlaced();
            }
            return ts;
        }

        @Override
        public boolean isDeterministic() {
            return false;
        }
    }

    /** EPOCH_MS(t): a TIMESTAMP_LTZ as epoch milliseconds (a window's bounds as the emulation
     *  and the events' ts give times). */
    public static final class EpochMs extends org.apache.flink.table.functions.ScalarFunction {
        private static final long serialVersionUID = 1L;

        public Long eval(java.time.Instant t) {
            return t == null ? null : t.toEpochMilli();
        }
    }

    /** Counts the query's changelog by kind and takes each output's latency: the paced clock's
     *  time past the event time the row stands for, in real microseconds. */
    public static final class Counter extends ProcessFunction<Row, Long> {
        private static final long serialVersionUID = 1L;
        private static final ConcurrentLinkedQueue<Counter> DONE = new ConcurrentLinkedQueue<>();
        private final double speedup;
        private final boolean collect;
        private transient long[] byKind;
        private transient long[] latencyUs;
        private transient int n;
        private transient long[] hashes;
        private transient int h;

        Counter(double speedup, boolean collect) {
            this.speedup = speedup;
            this.collect = collect;
        }

        /** The merged counts of every subtask of the job. */
        static final class Totals {
            long[] byKind = new long[RowKind.values().length];
            long[] latencyUs = new long[0];
            long[] outputHashes = new long[0];
        }

        static void reset() {
            DONE.clear();
            Pace.resetStats();
        }

        static Totals totals() {
            Totals t = new Totals();
            int size = 0;
            for (Counter c : DONE) {
                size += c.n;
            }
            t.latencyUs = new long[size];
            int at = 0;
            int hashed = 0;
            for (Counter c : DONE) {
                for (int k = 0; k < t.byKind.length; k++) {
                    t.byKind[k] += c.byKind[k];
                }
                System.arraycopy(c.latencyUs, 0, t.latencyUs, at, c.n);
                at += c.n;
                hashed += c.h;
            }
            t.outputHashes = new long[hashed];
            at = 0;
            for (Counter c : DONE) {
                if (c.hashes != null) {
                    System.arraycopy(c.hashes, 0, t.outputHashes, at, c.h);
                    at += c.h;
                }
            }
            return t;
        }

        @Override
        public void open(OpenContext context) {
            byKind = new long[RowKind.values().length];
            latencyUs = new long[1024];
            n = 0;
            hashes = collect ? new long[1024] : null;
            h = 0;
        }

        /** FNV-1a (64 bits) of a row's changelog kind and values, as Row prints them. */
        static long hash(Row row) {
            long x = 0xcbf29ce484222325L;
            for (byte b : row.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8)) {
                x ^= b & 0xff;
                x *= 0x100000001b3L;
            }
            return x;
        }

        @Override
        public void processElement(Row row, Context ctx, Collector<Long> out) {
            byKind[row.getKind().ordinal()]++;
            if (collect) {
                if (h == hashes.length) {
                    hashes = Arrays.copyOf(hashes, h * 2);
                }
                hashes[h++] = hash(row);
            }
            if (row.getKind() == RowKind.UPDATE_BEFORE || row.getKind() == RowKind.DELETE) {
                return;
            }
            Object ts = row.getField("out_ts");
            if (ts instanceof Long) {
                long lagClockMs = Clock.now() - (Long) ts;
                if (lagClockMs < 0) {
                    // emitted before the paced clock reached the time it stands for (a window
                    // the end-of-input watermark fired early): no latency was measured, and a
                    // 0 would pass for one
                    return;
                }
                if (n == latencyUs.length) {
                    latencyUs = Arrays.copyOf(latencyUs, n * 2);
                }
                latencyUs[n++] = (long) (lagClockMs / speedup * 1000.0);
            }
        }

        @Override
        public void close() {
            if (byKind != null) {
                DONE.add(this);
            }
        }
    }

    /** Reads a configuration value of this program's own keys (tests, the backend factory). */
    static String confValue(org.apache.flink.configuration.ReadableConfig config, String key,
                            String fallback) {
        return config.get(ConfigOptions.key(key).stringType().defaultValue(fallback));
    }
}
