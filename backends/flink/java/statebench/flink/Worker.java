package statebench.flink;

import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.runtime.util.EnvironmentInformation;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * statebench's JVM worker: one process drives Flink 2.x keyed state backends in batches.
 *
 * <p>Frames are length-prefixed over stdin/stdout; the layout is documented in
 * backends/flink/__init__.py. stdout carries only frames: System.out is redirected to stderr so
 * that nothing Flink or RocksDB prints can corrupt the protocol.
 */
public final class Worker {
    // control family 0x01-0x1F
    static final int OPEN_BACKEND = 0x01;
    static final int SET_TIME = 0x02;
    static final int SET_KEY = 0x03;
    static final int REGISTER = 0x04;
    static final int COMPACT = 0x05;
    static final int COUNTS = 0x06;
    static final int SNAPSHOT = 0x07;
    static final int BENCH = 0x08;
    static final int CLOSE = 0x09;
    static final int FLUSH = 0x0A;
    static final int PROPERTIES = 0x0B;
    static final int FORST_TTL_PROBE = 0x0C;
    // state-operation family 0x20-0x3F: u16 state id, then the op's arguments
    static final int CLEAR = 0x20;
    static final int VALUE_GET = 0x21;
    static final int VALUE_UPDATE = 0x22;
    static final int LIST_GET = 0x23;
    static final int LIST_ADD = 0x24;
    static final int LIST_ADD_ALL = 0x25;
    static final int LIST_UPDATE = 0x26;
    static final int MAP_GET = 0x27;
    static final int MAP_PUT = 0x28;
    static final int MAP_PUT_ALL = 0x29;
    static final int MAP_REMOVE = 0x2A;
    static final int MAP_CONTAINS = 0x2B;
    static final int MAP_ENTRIES = 0x2C;
    static final int MAP_KEYS = 0x2D;
    static final int MAP_VALUES = 0x2E;
    static final int MAP_IS_EMPTY = 0x2F;
    static final int REDUCING_GET = 0x30;
    static final int REDUCING_ADD = 0x31;
    static final int AGG_GET = 0x32;
    static final int AGG_ADD = 0x33;

    static final int PROTOCOL_VERSION = 1;

    private final CommandFamily[] families = new CommandFamily[256];
    /** Serves the event family and the state commands when the backend is forst-async (kind 3,
     *  State V2: {@link ForStAsyncLane#serves}). */
    private final ForStAsyncLane forstAsync = new ForStAsyncLane();
    FlinkBackend current;
    private boolean closing;

    Worker() {
        CommandFamily control = this::control;
        CommandFamily stateOps = this::stateOp;
        register(0x01, 0x1F, control);
        register(0x20, 0x3F, stateOps);
        Events.install(this);
    }

    /** Routes opcodes lo..hi (inclusive) to a family; later families extend the protocol. */
    void register(int lo, int hi, CommandFamily family) {
        for (int op = lo; op <= hi; op++) {
            if (families[op] != null) {
                throw new IllegalStateException("opcode " + op + " already has a family");
            }
            families[op] = family;
        }
    }

    FlinkBackend backend() {
        if (current == null) {
            throw new IllegalStateException("no backend is open (OPEN_BACKEND first)");
        }
        return current;
    }

    public static void main(String[] args) throws Exception {
        OutputStream out = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true));
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));
        Worker worker = new Worker();
        Wire.Out hello = new Wire.Out();
        hello.result((long) PROTOCOL_VERSION);
        hello.result(EnvironmentInformation.getVersion());
        writeFrame(out, 0, 0L, hello, -1, null);
        while (!worker.closing) {
            int len;
            try {
                len = in.readInt();
            } catch (EOFException eof) {
                break;
            }
            byte[] frame = new byte[len];
            in.readFully(frame);
            worker.batch(frame, out);
        }
        if (worker.current != null) {
            worker.current.close();
        }
        out.flush();
        System.exit(0);
    }

    /** Runs every command of one frame; stops at the first failing one and reports it. */
    void batch(byte[] frame, OutputStream out) throws Exception {
        Wire.In in = new Wire.In(frame);
        Wire.Out results = new Wire.Out();
        int index = 0;
        long start = System.nanoTime();
        try {
            while (in.hasMore()) {
                int opcode = in.u8();
                CommandFamily family = families[opcode];
                if (current != null && current.options.forstAsync
                        && ForStAsyncLane.serves(opcode)) {
                    family = forstAsync;
                }
                if (family == null) {
                    throw new IllegalArgumentException("unknown opcode 0x" + Integer.toHexString(opcode));
                }
                family.execute(this, opcode, in, results);
                index++;
            }
        } catch (Throwable t) {
            StringWriter trace = new StringWriter();
            t.printStackTrace(new PrintWriter(trace));
            writeFrame(out, 1, System.nanoTime() - start, null, index,
                    t + "\n" + trace.toString());
            return;
        }
        writeFrame(out, 0, System.nanoTime() - start, results, -1, null);
    }

    static void writeFrame(OutputStream out, int status, long nanos, Wire.Out results, int index,
                           String error) throws Exception {
        Wire.Out head = new Wire.Out();
        head.u8(status);
        head.i64(nanos);
        if (status == 0) {
            head.i32(results.count);
        } else {
            head.i32(index);
            head.str(error);
        }
        int body = head.size() + (status == 0 ? results.size() : 0);
        Wire.Out len = new Wire.Out();
        len.i32(body);
        out.write(len.buffer(), 0, len.size());
        out.write(head.buffer(), 0, head.size());
        if (status == 0) {
            out.write(results.buffer(), 0, results.size());
        }
        out.flush();
    }

    private void control(Worker self, int opcode, Wire.In in, Wire.Out out) throws Exception {
        switch (opcode) {
            case OPEN_BACKEND: {
                FlinkBackend.Options o = new FlinkBackend.Options();
                int kind = in.u8();
                if (kind > 3) {
                    throw new IllegalArgumentException("unknown backend kind " + kind
                            + " (0 heap, 1 rocksdb, 2 forst, 3 forst-async)");
                }
                o.rocksdb = kind == 1;
                o.forst = kind == 2;
                o.forstAsync = kind == 3;
                o.stringKeys = in.u8() == Wire.STRING;
                o.maxParallelism = in.i32();
                o.keyGroupStart = in.i32();
                o.keyGroupEnd = in.i32();
                o.dir = in.str();
                o.queryTimeAfterNumEntries = in.i64();
                o.periodicCompactionMs = in.i64();
                o.incrementalCheckpoints = in.u8() == 1;
                for (int i = in.i32(); i > 0; i--) {
                    String key = in.str();
                    String value = in.str();
                    if (key.equals(FlinkBackend.FORST_PRIMARY_DIR)) {
                        o.primaryDir = value;
                    } else {
                        o.rocksConf.put(key, value);
                    }
                }
                if (current != null) {
                    FlinkBackend old = current;
                    current = null;
                    boolean held = !old.states.isEmpty();
                    old.close();
                    if (held) {
                        // the next backend starts on an empty heap, as a fresh job's JVM does:
                        // the last one's garbage would otherwise set when the next task's
                        // collections come and what they copy. Once per task: a kept worker is
                        // reset to an empty backend when its task ends, then to the next task's
                        System.gc();
                    }
                }
                current = new FlinkBackend(o);
                return;
            }
            case SET_TIME:
                backend().time.now = in.i64();
                return;
            case SET_KEY: {
                Object key = in.value();
                FlinkBackend b = backend();
                if (b.options.stringKeys != (key instanceof String)) {
                    throw new IllegalArgumentException("key " + key + " does not match the worker's "
                            + (b.options.stringKeys ? "string" : "long") + " keys");
                }
                b.backend.setCurrentKey(key);
                return;
            }
            case REGISTER: {
                int sid = in.u16();
                int kind = in.u8();
                String name = in.str();
                int valueType = in.u8();
                int mapKeyType = in.u8();
                int function = in.u8();
                StateTtlConfig ttl = FlinkBackend.readTtl(in, in.i64());
                backend().register(sid, kind, name, valueType, mapKeyType, function, ttl);
                return;
            }
            case COMPACT:
                backend().compact();
                return;
            case FLUSH:
                backend().flush();
                return;
            case COUNTS:
                out.result(backend().counts());
                return;
            case PROPERTIES: {
                int n = in.i32();
                List<String> names = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    names.add(in.str());
                }
                out.result(backend().properties(names));
                return;
            }
            case SNAPSHOT: {
                long id = in.i64();
                String folder = in.str();
                int type = in.u8();
                out.result(backend().snapshot(id, folder, type));
                return;
            }
            case BENCH: {
                String op = in.str();
                FlinkBackend b = backend();
                int count = in.u16();
                List<FlinkBackend.Registered> states = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    states.add(b.state(in.u16(), 0));
                }
                int keys = in.i32();
                int minWarmup = in.i32();
                int warmup = in.i32();
                int rounds = in.i32();
                int roundMs = in.i32();
                boolean resume = in.u8() == 1;
                out.result(Bench.run(b, states, op, keys, minWarmup, warmup, rounds, roundMs,
                        resume));
                return;
            }
            case FORST_TTL_PROBE: {
                int path = in.u8();
                int keys = in.i32();
                long ttlMs = in.i64();
                String local = in.str();
                String primary = in.str();
                long queryTime = in.i64();
                out.result(ForStTtlProbe.run(path, keys, ttlMs, local, primary, queryTime));
                return;
            }
            case CLOSE:
                closing = true;
                return;
            default:
                throw new IllegalArgumentException("unknown control opcode 0x"
                        + Integer.toHexString(opcode));
        }
    }

    @SuppressWarnings("unchecked")
    private void stateOp(Worker self, int opcode, Wire.In in, Wire.Out out) throws Exception {
        int sid = in.u16();
        FlinkBackend b = backend();
        switch (opcode) {
            case CLEAR:
                b.state(sid, 0).state.clear();
                return;
            case VALUE_GET:
                out.result(((ValueState<Object>) b.state(sid, FlinkBackend.VALUE).state).value());
                return;
            case VALUE_UPDATE:
                ((ValueState<Object>) b.state(sid, FlinkBackend.VALUE).state).update(in.value());
                return;
            case LIST_GET:
                out.result(((ListState<Object>) b.state(sid, FlinkBackend.LIST).state).get());
                return;
            case LIST_ADD:
                ((ListState<Object>) b.state(sid, FlinkBackend.LIST).state).add(in.value());
                return;
            case LIST_ADD_ALL:
                ((ListState<Object>) b.state(sid, FlinkBackend.LIST).state)
                        .addAll((List<Object>) in.value());
                return;
            case LIST_UPDATE:
                ((ListState<Object>) b.state(sid, FlinkBackend.LIST).state)
                        .update((List<Object>) in.value());
                return;
            case MAP_GET:
                out.result(map(b, sid).get(in.value()));
                return;
            case MAP_PUT: {
                Object k = in.value();
                map(b, sid).put(k, in.value());
                return;
            }
            case MAP_PUT_ALL:
                map(b, sid).putAll((Map<Object, Object>) in.value());
                return;
            case MAP_REMOVE:
                map(b, sid).remove(in.value());
                return;
            case MAP_CONTAINS:
                out.result(map(b, sid).contains(in.value()));
                return;
            case MAP_ENTRIES: {
                Iterable<Map.Entry<Object, Object>> it = map(b, sid).entries();
                List<Object> pairs = new ArrayList<>();
                if (it != null) {
                    for (Map.Entry<Object, Object> e : it) {
                        List<Object> pair = new ArrayList<>(2);
                        pair.add(e.getKey());
                        pair.add(e.getValue());
                        pairs.add(pair);
                    }
                }
                out.result(pairs);
                return;
            }
            case MAP_KEYS: {
                Iterable<Object> it = map(b, sid).keys();
                out.result(it == null ? Collections.emptyList() : it);
                return;
            }
            case MAP_VALUES: {
                Iterable<Object> it = map(b, sid).values();
                out.result(it == null ? Collections.emptyList() : it);
                return;
            }
            case MAP_IS_EMPTY:
                out.result(map(b, sid).isEmpty());
                return;
            case REDUCING_GET:
                out.result(((ReducingState<Object>) b.state(sid, FlinkBackend.REDUCING).state).get());
                return;
            case REDUCING_ADD:
                ((ReducingState<Object>) b.state(sid, FlinkBackend.REDUCING).state).add(in.value());
                return;
            case AGG_GET:
                out.result(((AggregatingState<Object, Object>)
                        b.state(sid, FlinkBackend.AGGREGATING).state).get());
                return;
            case AGG_ADD:
                ((AggregatingState<Object, Object>) b.state(sid, FlinkBackend.AGGREGATING).state)
                        .add(in.value());
                return;
            default:
                throw new IllegalArgumentException("unknown state opcode 0x"
                        + Integer.toHexString(opcode));
        }
    }

    @SuppressWarnings("unchecked")
    private static MapState<Object, Object> map(FlinkBackend b, int sid) {
        return (MapState<Object, Object>) b.state(sid, FlinkBackend.MAP).state;
    }
}
