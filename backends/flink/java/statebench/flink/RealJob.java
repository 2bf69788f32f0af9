package statebench.flink;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.accumulators.LongMaximum;
import org.apache.flink.api.common.accumulators.LongMinimum;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.typeutils.runtime.NullableSerializer;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.AbstractCheckpointStats;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.checkpoint.SubtaskStateStats;
import org.apache.flink.runtime.checkpoint.TaskStateStats;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.ArchivedExecutionJobVertex;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.JobVertexID;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.state.AsyncKeyedStateBackend;
import org.apache.flink.runtime.state.CheckpointableKeyedStateBackend;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.OperatorStateBackend;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.StateBackendFactory;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackendFactory;
import org.apache.flink.state.rocksdb.ConfigurableRocksDBOptionsFactory;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackendFactory;
import org.apache.flink.state.rocksdb.RocksDBOptionsFactory;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A real Flink DataStream job over a workload's events: the check of the lanes' checkpoint model.
 *
 * <p>Why a job and not the lanes' worker: the lanes drive a keyed backend directly and model
 * Flink's checkpoint phases themselves; this program lets Flink do all of it. On a local
 * MiniCluster, a FLIP-27 sequence source (parallelism 1) reads the events file that
 * backends/flink/real_job.py wrote, keyBy(key) sends them to a KeyedProcessFunction that replays
 * each op on the same states with the same StateTtlConfig as the lanes (statebench.flink.Events:
 * the same state names, serializers, payloads and Flink builder calls via FlinkBackend.ttl), on
 * HashMapStateBackend or EmbeddedRocksDBStateBackend, with Flink's own periodic checkpointing
 * (sync phase on the task thread, async phase on Flink's snapshot threads) to a real folder, and
 * a discarding sink.
 *
 * <p>TTL time: as in the lanes, the TtlTimeProvider is a logical clock at each record's
 * timestamp (the function sets it before applying the record). A job has no public hook for
 * the provider (StreamTaskStateInitializerImpl passes TtlTimeProvider.DEFAULT), so the state
 * backend is a thin wrapper, named by state.backend.type as any custom StateBackendFactory is,
 * that hands Flink's own backend the same parameters with the subtask's logical clock instead.
 * Checkpoints, unlike the lanes', are triggered on the wall clock (every interval ms), as a real
 * job's are.
 *
 * <p>Usage: {@code java -cp <worker classpath> statebench.flink.RealJob --events FILE
 * --backend heap|rocksdb --checkpoint-dir DIR [options]}; prints one JSON object on stdout.
 * Errors: one line on stderr, exit status 2 for bad arguments, 1 for a failed job.
 */
public final class RealJob {
    /** The name of the keyed operator (found again in the checkpoint statistics). */
    static final String KEYED = "statebench-replay";
    /** The events file: magic, then little-endian i64 count, i32 record size, i32 version. */
    static final byte[] MAGIC = "SBEVENTS".getBytes(StandardCharsets.US_ASCII);
    static final int HEADER = 24;
    /** key i64, ts i64, op i8, value i64, value_size i32, map_key i32 (little-endian). */
    static final int RECORD = 33;
    static final int VERSION = 1;
    /** Which Flink backend the wrapper builds (a configuration key of this program's own). */
    static final String INNER_BACKEND = "statebench.real-job.backend";

    private RealJob() {
    }

    // --------------------------------------------------------------------------------------
    // The logical TTL clock of each keyed subtask (one JVM: the MiniCluster runs in this one)
    // --------------------------------------------------------------------------------------

    /** One clock per keyed subtask, created before the job starts. */
    static final class Clocks {
        private static volatile FlinkBackend.LogicalTime[] clocks = new FlinkBackend.LogicalTime[0];

        static void create(int parallelism, long startMs) {
            FlinkBackend.LogicalTime[] out = new FlinkBackend.LogicalTime[parallelism];
            for (int i = 0; i < parallelism; i++) {
                out[i] = new FlinkBackend.LogicalTime();
                out[i].now = startMs;
            }
            clocks = out;
        }

        static FlinkBackend.LogicalTime of(int subtask) {
            FlinkBackend.LogicalTime[] all = clocks;
            if (subtask < 0 || subtask >= all.length) {
                throw new IllegalStateException("no logical TTL clock for subtask " + subtask);
            }
            return all[subtask];
        }
    }

    /** state.backend.type names this factory: Flink's own backend, wrapped (see the class doc). */
    public static final class LogicalTtlBackendFactory implements StateBackendFactory<StateBackend> {
        @Override
        public StateBackend createFromConfig(ReadableConfig config, ClassLoader loader)
                throws IllegalConfigurationException, IOException {
            String inner = config.get(ConfigOptions.key(INNER_BACKEND).stringType()
                    .defaultValue("hashmap"));
            StateBackend delegate;
            if (inner.equals("rocksdb")) {
                delegate = new EmbeddedRocksDBStateBackendFactory().createFromConfig(config, loader);
            } else if (inner.equals("hashmap")) {
                delegate = new HashMapStateBackendFactory().createFromConfig(config, loader);
            } else {
                throw new IllegalConfigurationException("unknown inner backend " + inner);
            }
            return new LogicalTtlBackend(delegate);
        }
    }

    /** Flink's backend with the subtask's logical clock as its TtlTimeProvider; else unchanged. */
    public static final class LogicalTtlBackend implements StateBackend {
        private static final long serialVersionUID = 1L;
        private final StateBackend delegate;

        LogicalTtlBackend(StateBackend delegate) {
            this.delegate = delegate;
        }

        private static <K> KeyedStateBackendParameters<K> withClock(
                KeyedStateBackendParameters<K> parameters) {
            int subtask = parameters.getEnv().getTaskInfo().getIndexOfThisSubtask();
            return new KeyedStateBackendParametersImpl<>(parameters)
                    .setTtlTimeProvider(Clocks.of(subtask));
        }

        @Override
        public String getName() {
            return delegate.getName();
        }

        @Override
        public <K> CheckpointableKeyedStateBackend<K> createKeyedStateBackend(
                KeyedStateBackendParameters<K> parameters) throws Exception {
            return delegate.createKeyedStateBackend(withClock(parameters));
        }

        @Override
        public <K> AsyncKeyedStateBackend<K> createAsyncKeyedStateBackend(
                KeyedStateBackendParameters<K> parameters) throws Exception {
            return delegate.createAsyncKeyedStateBackend(withClock(parameters));
        }

        @Override
        public boolean supportsAsyncKeyedStateBackend() {
            return delegate.supportsAsyncKeyedStateBackend();
        }

        @Override
        public OperatorStateBackend createOperatorStateBackend(
                OperatorStateBackendParameters parameters) throws Exception {
            return delegate.createOperatorStateBackend(parameters);
        }

        @Override
        public boolean useManagedMemory() {
            return delegate.useManagedMemory();
        }

        @Override
        public boolean supportsNoClaimRestoreMode() {
            return delegate.supportsNoClaimRestoreMode();
        }

        @Override
        public boolean supportsSavepointFormat(SavepointFormatType format) {
            return delegate.supportsSavepointFormat(format);
        }
    }

    /** level0_file_num_compaction_trigger from the configuration (FlinkBackend.LEVEL0_TRIGGER),
     *  as the lanes' Level0Trigger sets it: Flink has no configuration key for it. */
    public static final class Level0TriggerFactory implements ConfigurableRocksDBOptionsFactory {
        private static final long serialVersionUID = 1L;
        private int trigger = -1;

        @Override
        public RocksDBOptionsFactory configure(ReadableConfig config) {
            Level0TriggerFactory out = new Level0TriggerFactory();
            out.trigger = Integer.parseInt(config.get(ConfigOptions.key(FlinkBackend.LEVEL0_TRIGGER)
                    .stringType().defaultValue("-1")));
            return out;
        }

        @Override
        public DBOptions createDBOptions(DBOptions current, Collection<AutoCloseable> handles) {
            return current;
        }

        @Override
        public ColumnFamilyOptions createColumnOptions(
                ColumnFamilyOptions current, Collection<AutoCloseable> handles) {
            return trigger > 0 ? current.setLevel0FileNumCompactionTrigger(trigger) : current;
        }
    }

    // --------------------------------------------------------------------------------------
    // The job's records and functions
    // --------------------------------------------------------------------------------------

    /** One workload event (a Flink POJO: public fields, public no-argument constructor). */
    public static final class Event {
        public long key;
        public long ts;
        public byte op;
        public long value;
        public int valueSize;
        public int mapKey;

        public Event() {
        }
    }

    /** Index -> event: the sequence source's numbers read from the memory-mapped events file. */
    public static final class ReadEvent extends RichMapFunction<Long, Event> {
        private static final long serialVersionUID = 1L;
        private static final long PER_CHUNK = (Integer.MAX_VALUE / RECORD) - 1;
        private final String path;
        private transient MappedByteBuffer[] chunks;

        ReadEvent(String path) {
            this.path = path;
        }

        @Override
        public void open(OpenContext context) throws Exception {
            try (FileChannel ch = FileChannel.open(new File(path).toPath(), StandardOpenOption.READ)) {
                long count = (ch.size() - HEADER) / RECORD;
                int n = (int) ((count + PER_CHUNK - 1) / PER_CHUNK);
                chunks = new MappedByteBuffer[n];
                for (int i = 0; i < n; i++) {
                    long first = i * PER_CHUNK;
                    long records = Math.min(PER_CHUNK, count - first);
                    chunks[i] = ch.map(FileChannel.MapMode.READ_ONLY, HEADER + first * RECORD,
                            records * RECORD);
                    chunks[i].order(ByteOrder.LITTLE_ENDIAN);
                }
            }
        }

        @Override
        public Event map(Long index) {
            long i = index;
            ByteBuffer b = chunks[(int) (i / PER_CHUNK)];
            int at = (int) (i % PER_CHUNK) * RECORD;
            Event e = new Event();
            e.key = b.getLong(at);
            e.ts = b.getLong(at + 8);
            e.op = b.get(at + 16);
            e.value = b.getLong(at + 17);
            e.valueSize = b.getInt(at + 25);
            e.mapKey = b.getInt(at + 29);
            return e;
        }
    }

    /** keyBy(event.key). */
    public static final class KeyOf implements KeySelector<Event, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long getKey(Event e) {
            return e.key;
        }
    }

    /** What the keyed function needs (serialised into the job with it). */
    static final class Settings implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        int valueType = Events.V_STRING;
        int mask;
        long ttlMs;
        int update = 1;
        int visibility = 1;
        int flags;
        int incSize;
        boolean incPerRecord;
        long queryTime = 1000L;
        /** Warm-up records of each keyed subtask (the lanes': its task's events x fraction). */
        long[] warmups = {0L};
    }

    /**
     * Each event's op on the subtask's states, the TTL clock at the event's timestamp first:
     * the ops of Events.apply (read-modify-write = value() then update(), list get and map
     * iterate walk every element), payloads as the lanes make them. Timing: the first record,
     * the record that ends the warm-up and the last record (System.nanoTime), as accumulators.
     */
    public static final class Replay extends KeyedProcessFunction<Long, Event, Long> {
        private static final long serialVersionUID = 1L;
        private final Settings s;
        private transient FlinkBackend.LogicalTime clock;
        private transient ValueState<Object> value;
        private transient ListState<Object> list;
        private transient MapState<Object, Object> map;
        private transient ReducingState<Object> reducing;
        private transient AggregatingState<Object, Object> aggregating;
        private transient Map<Integer, Object> payloads;
        private transient long records;
        private transient long firstNanos;
        private transient long firstWallMs;
        private transient long warmNanos;
        private transient long lastNanos;
        private transient long lastTs;
        private transient long warmup;

        Replay(Settings s) {
            this.s = s;
        }

        @Override
        @SuppressWarnings({"unchecked", "rawtypes"})
        public void open(OpenContext context) throws Exception {
            int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            clock = Clocks.of(subtask);
            warmup = s.warmups[Math.min(subtask, s.warmups.length - 1)];
            payloads = new HashMap<>();
            lastTs = Long.MIN_VALUE;
            StateTtlConfig ttl = s.ttlMs > 0 ? FlinkBackend.ttl(s.ttlMs, s.update, s.visibility,
                    s.flags, s.incSize, s.incPerRecord, s.queryTime) : null;
            TypeSerializer vs;
            switch (s.valueType) {
                case Events.V_LONG:
                    vs = LongSerializer.INSTANCE;
                    break;
                case Events.V_STRING:
                    vs = StringSerializer.INSTANCE;
                    break;
                case Events.V_BYTES:
                    vs = BytePrimitiveArraySerializer.INSTANCE;
                    break;
                default:
                    throw new IllegalArgumentException("unknown event value type " + s.valueType);
            }
            if ((s.mask & 1) != 0) {
                ValueStateDescriptor d = new ValueStateDescriptor<>(Events.NAMES[0], vs);
                enable(d, ttl);
                value = getRuntimeContext().getState(d);
            }
            if ((s.mask & 2) != 0) {
                ListStateDescriptor d = new ListStateDescriptor<>(Events.NAMES[1], vs);
                enable(d, ttl);
                list = getRuntimeContext().getListState(d);
            }
            if ((s.mask & 4) != 0) {
                MapStateDescriptor d = new MapStateDescriptor<>(Events.NAMES[2],
                        IntSerializer.INSTANCE, NullableSerializer.wrapIfNullIsNotSupported(vs, false));
                enable(d, ttl);
                map = getRuntimeContext().getMapState(d);
            }
            if ((s.mask & 8) != 0) {
                ReducingStateDescriptor d = new ReducingStateDescriptor<>(Events.NAMES[3],
                        (ReduceFunction) Events::max, vs);
                enable(d, ttl);
                reducing = getRuntimeContext().getReducingState(d);
            }
            if ((s.mask & 16) != 0) {
                AggregatingStateDescriptor d = new AggregatingStateDescriptor<>(Events.NAMES[4],
                        new Events.SumAggregate(), LongSerializer.INSTANCE);
                enable(d, ttl);
                aggregating = getRuntimeContext().getAggregatingState(d);
            }
        }

        private static void enable(org.apache.flink.api.common.state.StateDescriptor<?, ?> d,
                                   StateTtlConfig ttl) {
            if (ttl != null) {
                d.enableTimeToLive(ttl);
            }
        }

        private Object payload(Event e) {
            if (s.valueType == Events.V_LONG) {
                return e.value;
            }
            int size = e.valueSize;
            Object cached = payloads.get(size);
            if (cached == null) {
                byte[] data = new byte[size];
                for (int i = 0; i < size; i++) {
                    data[i] = Events.PATTERN[i % Events.PATTERN.length];
                }
                cached = s.valueType == Events.V_STRING
                        ? new String(data, StandardCharsets.US_ASCII) : data;
                payloads.put(size, cached);
            }
            return cached;
        }

        @Override
        public void processElement(Event e, Context ctx, Collector<Long> out) throws Exception {
            if (records == 0) {
                firstNanos = System.nanoTime();
                firstWallMs = System.currentTimeMillis();
            }
            if (e.ts != lastTs) {
                clock.now = e.ts;
                lastTs = e.ts;
            }
            switch (e.op) {
                case Events.VALUE_GET:
                    value.value();
                    break;
                case Events.VALUE_UPDATE:
                    value.update(payload(e));
                    break;
                case Events.LIST_ADD:
                    list.add(payload(e));
                    break;
                case Events.MAP_PUT:
                    map.put(e.mapKey, payload(e));
                    break;
                case Events.VALUE_RMW:
                    value.value();
                    value.update(payload(e));
                    break;
                case Events.MAP_GET:
                    map.get(e.mapKey);
                    break;
                case Events.REDUCING_ADD:
                    reducing.add(payload(e));
                    break;
                case Events.LIST_GET: {
                    Iterable<Object> items = list.get();
                    if (items != null) {
                        for (Object ignored : items) {
                            // walk every element, as the lanes do
                        }
                    }
                    break;
                }
                case Events.MAP_ITERATE: {
                    Iterable<Map.Entry<Object, Object>> entries = map.entries();
                    if (entries != null) {
                        for (Map.Entry<Object, Object> ignored : entries) {
                            // walk every entry, as the lanes do
                        }
                    }
                    break;
                }
                case Events.VALUE_CLEAR:
                    value.clear();
                    break;
                case Events.MAP_REMOVE:
                    map.remove(e.mapKey);
                    break;
                case Events.AGGREGATING_ADD:
                    aggregating.add(payload(e));
                    break;
                default:
                    throw new IllegalArgumentException("unknown op code " + e.op);
            }
            records++;
            lastNanos = System.nanoTime();
            if (records == warmup) {
                warmNanos = lastNanos;
            }
        }

        @Override
        public void close() throws Exception {
            if (records == 0) {
                return;
            }
            long post = Math.max(0L, records - warmup);
            add("records", new LongCounter(records));
            add("post_warmup_records", new LongCounter(post));
            add("first_nanos", new LongMinimum(firstNanos));
            add("first_wall_ms", new LongMinimum(firstWallMs));
            add("last_nanos", new LongMaximum(lastNanos));
            add("warm_nanos", new LongMaximum(warmup > 0 && post > 0 ? warmNanos : firstNanos));
        }

        private void add(String name, org.apache.flink.api.common.accumulators.Accumulator<Long, Long> acc) {
            getRuntimeContext().addAccumulator(name, acc);
        }
    }

    // --------------------------------------------------------------------------------------
    // Arguments, the cluster, the report
    // --------------------------------------------------------------------------------------

    /** Bad command-line input: one line, exit status 2. */
    static final class UsageError extends Exception {
        private static final long serialVersionUID = 1L;

        UsageError(String message) {
            super(message);
        }
    }

    /** The parsed command line. */
    static final class Args {
        String events;
        boolean rocksdb;
        String checkpointDir;
        int parallelism = 1;
        int maxParallelism = 128;
        long intervalMs = 500L;
        boolean incremental;
        long startMs;
        long periodicMs = -1L;
        final Settings s = new Settings();
        final Map<String, String> conf = new LinkedHashMap<>();
    }

    static Args parse(String[] argv) throws UsageError {
        Args a = new Args();
        for (int i = 0; i < argv.length; i++) {
            String name = argv[i];
            if (!name.startsWith("--") || i + 1 >= argv.length) {
                throw new UsageError("expected --option value pairs, got '" + name + "'");
            }
            String v = argv[++i];
            try {
                switch (name) {
                    case "--events": a.events = v; break;
                    case "--backend":
                        if (!v.equals("heap") && !v.equals("rocksdb")) {
                            throw new UsageError("--backend must be heap or rocksdb, got '" + v + "'");
                        }
                        a.rocksdb = v.equals("rocksdb");
                        break;
                    case "--checkpoint-dir": a.checkpointDir = v; break;
                    case "--parallelism": a.parallelism = Integer.parseInt(v); break;
                    case "--max-parallelism": a.maxParallelism = Integer.parseInt(v); break;
                    case "--checkpoint-interval-ms": a.intervalMs = Long.parseLong(v); break;
                    case "--incremental": a.incremental = Boolean.parseBoolean(v); break;
                    case "--start-ms": a.startMs = Long.parseLong(v); break;
                    case "--value-type": a.s.valueType = Integer.parseInt(v); break;
                    case "--state-mask": a.s.mask = Integer.parseInt(v); break;
                    case "--ttl-ms": a.s.ttlMs = Long.parseLong(v); break;
                    case "--update": a.s.update = Integer.parseInt(v); break;
                    case "--visibility": a.s.visibility = Integer.parseInt(v); break;
                    case "--flags": a.s.flags = Integer.parseInt(v); break;
                    case "--incremental-size": a.s.incSize = Integer.parseInt(v); break;
                    case "--incremental-per-record": a.s.incPerRecord = Boolean.parseBoolean(v); break;
                    case "--query-time": a.s.queryTime = Long.parseLong(v); break;
                    case "--periodic-compaction-ms": a.periodicMs = Long.parseLong(v); break;
                    case "--warmup-records": {
                        String[] parts = v.split(",");
                        a.s.warmups = new long[parts.length];
                        for (int p = 0; p < parts.length; p++) {
                            a.s.warmups[p] = Long.parseLong(parts[p].trim());
                        }
                        break;
                    }
                    case "--conf": {
                        int eq = v.indexOf('=');
                        if (eq <= 0) {
                            throw new UsageError("--conf takes key=value, got '" + v + "'");
                        }
                        a.conf.put(v.substring(0, eq), v.substring(eq + 1));
                        break;
                    }
                    default:
                        throw new UsageError("unknown option " + name);
                }
            } catch (NumberFormatException ex) {
                throw new UsageError(name + " takes a number, got '" + v + "'");
            }
        }
        if (a.events == null || a.checkpointDir == null) {
            throw new UsageError("--events and --checkpoint-dir are required");
        }
        if (a.parallelism < 1 || a.parallelism > a.maxParallelism) {
            throw new UsageError("need 1 <= --parallelism <= --max-parallelism");
        }
        if (a.intervalMs < 10) {
            throw new UsageError("--checkpoint-interval-ms must be >= 10 (Flink's minimum)");
        }
        if (a.s.mask <= 0 || a.s.mask > 31) {
            throw new UsageError("--state-mask must name at least one state (1..31)");
        }
        return a;
    }

    /** The events file's record count, after checking its header and length. */
    static long countEvents(String path) throws UsageError, IOException {
        File f = new File(path);
        if (!f.isFile()) {
            throw new UsageError("events file " + path + " not found");
        }
        try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.READ)) {
            ByteBuffer head = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
            while (head.hasRemaining() && ch.read(head) >= 0) {
                // read the whole header
            }
            head.flip();
            byte[] magic = new byte[MAGIC.length];
            if (head.remaining() < HEADER) {
                throw new UsageError("events file " + path + " is shorter than its header");
            }
            head.get(magic);
            long count = head.getLong();
            int size = head.getInt();
            int version = head.getInt();
            if (!java.util.Arrays.equals(magic, MAGIC) || size != RECORD || version != VERSION) {
                throw new UsageError("events file " + path + " is not a statebench events file "
                        + "(version " + VERSION + ", " + RECORD + "-byte records)");
            }
            if (count < 1 || ch.size() != HEADER + count * RECORD) {
                throw new UsageError("events file " + path + " says " + count + " events but holds "
                        + (ch.size() - HEADER) + " bytes of records");
            }
            return count;
        }
    }

    static Configuration configuration(Args a) {
        Configuration conf = new Configuration();
        set(conf, "state.backend.type", LogicalTtlBackendFactory.class.getName());
        set(conf, INNER_BACKEND, a.rocksdb ? "rocksdb" : "hashmap");
        set(conf, "execution.checkpointing.interval", a.intervalMs + " ms");
        set(conf, "execution.checkpointing.storage", "filesystem");
        // file:// and the raw path, not toURI(): Flink's Path(String) quotes its escapes again
        set(conf, "execution.checkpointing.dir",
                "file://" + new File(a.checkpointDir).getAbsolutePath());
        set(conf, "execution.checkpointing.incremental", Boolean.toString(a.incremental));
        // every checkpoint of the run in the statistics, not the last 10
        set(conf, "web.checkpoints.history", "100000");
        set(conf, "parallelism.default", Integer.toString(a.parallelism));
        set(conf, "pipeline.max-parallelism", Integer.toString(a.maxParallelism));
        set(conf, "rest.bind-port", "0");
        // RocksDB as the lanes open it: Flink's defaults without managed memory (no shared
        // cache or write-buffer manager), the compaction filter's two per-backend settings
        set(conf, "state.backend.rocksdb.memory.managed", "false");
        set(conf, "state.backend.rocksdb.compaction.filter.query-time-after-num-entries",
                Long.toString(a.s.queryTime));
        if (a.periodicMs >= 0) {
            set(conf, "state.backend.rocksdb.compaction.filter.periodic-compaction-time",
                    a.periodicMs + " ms");
        }
        for (Map.Entry<String, String> e : a.conf.entrySet()) {
            set(conf, e.getKey(), e.getValue());
            if (e.getKey().equals(FlinkBackend.LEVEL0_TRIGGER)) {
                set(conf, "state.backend.rocksdb.options-factory",
                        Level0TriggerFactory.class.getName());
            }
        }
        return conf;
    }

    private static void set(Configuration conf, String key, String value) {
        conf.setString(key, value);
    }

    public static void main(String[] argv) {
        PrintStream out = System.out;
        try {
            Args a = parse(argv);
            long count = countEvents(a.events);
            if (java.util.Arrays.stream(a.s.warmups).sum() >= count
                    || java.util.Arrays.stream(a.s.warmups).min().orElse(0L) < 0) {
                throw new UsageError("--warmup-records (per subtask) must be >= 0 and sum to "
                        + "below the " + count + " events");
            }
            out.println(run(a, count));
            out.flush();
            System.exit(0);
        } catch (UsageError e) {
            System.err.println("statebench real job: " + e.getMessage());
            System.exit(2);
        } catch (Throwable t) {
            System.err.println("statebench real job failed: " + t);
            t.printStackTrace(System.err);
            System.exit(1);
        }
    }

    static String run(Args a, long count) throws Exception {
        Clocks.create(a.parallelism, a.startMs);
        Configuration conf = configuration(a);
        MiniClusterConfiguration mc = new MiniClusterConfiguration.Builder()
                .setConfiguration(conf).setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(a.parallelism).withRandomPorts().build();
        try (MiniCluster cluster = new MiniCluster(mc)) {
            cluster.start();
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
            env.fromSequence(0, count - 1).name("events").setParallelism(1)
                    .map(new ReadEvent(a.events)).name("read-events").setParallelism(1)
                    .keyBy(new KeyOf())
                    .process(new Replay(a.s)).name(KEYED).uid(KEYED).setParallelism(a.parallelism)
                    .sinkTo(new DiscardingSink<>()).name("discard").setParallelism(a.parallelism);
            JobGraph graph = env.getStreamGraph().getJobGraph();
            long submitted = System.nanoTime();
            JobID id = cluster.submitJob(graph).get().getJobID();
            JobResult result = cluster.requestJobResult(id).get();
            long jobNanos = System.nanoTime() - submitted;
            JobExecutionResult done = result.toJobExecutionResult(RealJob.class.getClassLoader());
            AccessExecutionGraph archived = cluster.getArchivedExecutionGraph(id).get();
            return report(a, count, done, archived, jobNanos);
        }
    }

    private static long acc(JobExecutionResult r, String name) {
        Object v = r.getAccumulatorResult(name);
        if (!(v instanceof Long)) {
            throw new IllegalStateException("the job reported no '" + name + "' (no record reached "
                    + "the keyed function?)");
        }
        return (Long) v;
    }

    static String report(Args a, long count, JobExecutionResult r, AccessExecutionGraph g,
                         long jobNanos) {
        long records = acc(r, "records");
        long post = acc(r, "post_warmup_records");
        long first = acc(r, "first_nanos");
        long last = acc(r, "last_nanos");
        long warm = acc(r, "warm_nanos");
        long firstWall = acc(r, "first_wall_ms");
        long lastWall = firstWall + (last - first) / 1_000_000L;
        if (records != count) {
            throw new IllegalStateException("the keyed function saw " + records + " of " + count
                    + " events");
        }
        JobVertexID keyed = null;
        for (ArchivedExecutionJobVertex v : ((org.apache.flink.runtime.executiongraph.ArchivedExecutionGraph) g)
                .getVerticesTopologically()) {
            if (v.getName().contains(KEYED)) {
                keyed = v.getJobVertexId();
            }
        }
        CheckpointStatsSnapshot stats = g.getCheckpointStatsSnapshot();
        List<AbstractCheckpointStats> history = new ArrayList<>(stats.getHistory().getCheckpoints());
        history.sort((x, y) -> Long.compare(x.getCheckpointId(), y.getCheckpointId()));
        StringBuilder rows = new StringBuilder();
        long inWindow = 0;
        double syncMs = 0;
        double asyncMs = 0;
        for (AbstractCheckpointStats c : history) {
            long syncC = 0;
            long asyncC = 0;
            long alignC = 0;
            long delayC = 0;
            TaskStateStats t = keyed == null ? null : c.getTaskStateStats(keyed);
            if (t != null) {
                for (SubtaskStateStats st : t.getSubtaskStats()) {
                    if (st != null) {
                        syncC = Math.max(syncC, st.getSyncCheckpointDuration());
                        asyncC = Math.max(asyncC, st.getAsyncCheckpointDuration());
                        alignC = Math.max(alignC, st.getAlignmentDuration());
                        delayC = Math.max(delayC, st.getCheckpointStartDelay());
                    }
                }
            }
            boolean during = c.getTriggerTimestamp() >= firstWall && c.getTriggerTimestamp() <= lastWall;
            if (during && c.getStatus().isCompleted()) {
                inWindow++;
                syncMs += syncC;
                asyncMs += asyncC;
            }
            if (rows.length() > 0) {
                rows.append(", ");
            }
            rows.append(String.format(Locale.ROOT,
                    "{\"id\": %d, \"status\": \"%s\", \"trigger_offset_ms\": %d, "
                            + "\"during_records\": %s, \"state_bytes\": %d, "
                            + "\"checkpointed_bytes\": %d, \"end_to_end_ms\": %d, \"sync_ms\": %d, "
                            + "\"async_ms\": %d, \"alignment_ms\": %d, \"start_delay_ms\": %d}",
                    c.getCheckpointId(), c.getStatus(), c.getTriggerTimestamp() - firstWall, during,
                    c.getStateSize(), c.getCheckpointedSize(), c.getEndToEndDuration(), syncC,
                    asyncC, alignC, delayC));
        }
        long gcMs = 0;
        long gcCount = 0;
        for (java.lang.management.GarbageCollectorMXBean gc
                : java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()) {
            gcMs += Math.max(0L, gc.getCollectionTime());
            gcCount += Math.max(0L, gc.getCollectionCount());
        }
        double cpuS = -1;
        java.lang.management.OperatingSystemMXBean os =
                java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean) {
            cpuS = ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() / 1e9;
        }
        double wallS = (last - first) / 1e9;
        double postS = (last - warm) / 1e9;
        return String.format(Locale.ROOT,
                "{\"backend\": \"%s\", \"parallelism\": %d, \"records\": %d, \"warmup_records\": %d, "
                        + "\"wall_s\": %.6f, \"records_per_s\": %.3f, "
                        + "\"records_per_s_after_warmup\": %.3f, \"job_s\": %.3f, "
                        + "\"checkpoint_interval_ms\": %d, \"checkpoint_mode\": \"%s\", "
                        + "\"checkpoints_completed\": %d, \"checkpoints_failed\": %d, "
                        + "\"checkpoints_during_records\": %d, "
                        + "\"checkpoint_sync_ms_during_records\": %.1f, "
                        + "\"checkpoint_async_ms_during_records\": %.1f, "
                        + "\"jvm_gc_ms\": %d, \"jvm_gc_count\": %d, \"jvm_cpu_s\": %.3f, "
                        + "\"state_backend\": \"%s\", \"ttl_clock\": \"logical (record timestamps)\", "
                        + "\"checkpoints\": [%s]}",
                a.rocksdb ? "rocksdb" : "heap", a.parallelism, records, records - post, wallS,
                wallS > 0 ? records / wallS : 0.0, postS > 0 ? post / postS : 0.0,
                jobNanos / 1e9, a.intervalMs, a.incremental ? "incremental" : "full",
                stats.getCounts().getNumberOfCompletedCheckpoints(),
                stats.getCounts().getNumberOfFailedCheckpoints(), inWindow, syncMs, asyncMs,
                gcMs, gcCount, cpuS, g.getStateBackendName().orElse("?"), rows);
    }
}
