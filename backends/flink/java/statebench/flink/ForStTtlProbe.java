package statebench.flink;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.RecoveryClaimMode;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.fs.Path;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.asyncprocessing.EpochManager;
import org.apache.flink.runtime.asyncprocessing.RecordContext;
import org.apache.flink.runtime.asyncprocessing.StateExecutionController;
import org.apache.flink.runtime.asyncprocessing.declare.DeclarationManager;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.state.forst.ForStConfigurableOptions;
import org.apache.flink.state.forst.ForStKeyedStateBackend;
import org.apache.flink.state.forst.ForStKeyedStateBackendBuilder;
import org.apache.flink.state.forst.ForStPathContainer;
import org.apache.flink.state.forst.ForStResourceContainer;
import org.apache.flink.state.forst.ForStStateBackend;
import org.apache.flink.state.forst.sync.ForStPriorityQueueConfig;
import org.apache.flink.streaming.runtime.tasks.StreamTaskActionExecutor;
import org.apache.flink.streaming.runtime.tasks.mailbox.MailboxExecutorImpl;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailboxImpl;

import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Does ForSt's TTL compaction filter remove expired entries, on the V1 (synchronous) and on the
 * V2 (asynchronous, State V2) path? FLINK-40354 reports that on V2 the filter is never configured.
 *
 * <p>One experiment per call, under a logical TtlTimeProvider: a value state with TTL `ttl`
 * (OnCreateAndWrite, ReturnExpiredIfNotCleanedUp, cleanupInRocksdbCompactFilter) gets `keys`
 * entries at time 0 and one fresh entry at ttl + 1; the memtables are flushed and the state's
 * column family compacted manually (RocksDB's compactRange, which runs compaction filters).
 * ReturnExpiredIfNotCleanedUp hides nothing on read, so an expired value that still reads back
 * was not removed. Returns [physical entries before the compaction, after it, expired values
 * still readable, whether the fresh value reads back].
 *
 * <p>V2 is driven as Flink's own ForSt tests drive it (ForStStateTestBase): a
 * StateExecutionController over the backend's StateExecutor with a mailbox executor, one record
 * context per key, and the states' synchronous methods, which go through the controller and
 * ForSt's executor threads.
 */
final class ForStTtlProbe {
    private ForStTtlProbe() {}

    static final int SYNC = 1;
    static final int ASYNC = 2;

    static StateTtlConfig ttl(long ttlMs, long queryTime) {
        return StateTtlConfig.newBuilder(Duration.ofMillis(ttlMs))
                .setUpdateType(StateTtlConfig.UpdateType.OnCreateAndWrite)
                .setStateVisibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)
                .cleanupInRocksdbCompactFilter(queryTime)
                .build();
    }

    static List<Object> run(int path, int keys, long ttlMs, String local, String primary,
                            long queryTime) throws Exception {
        if (keys < 1 || ttlMs < 1) {
            throw new IllegalArgumentException("the probe needs keys >= 1 and ttl >= 1 ms");
        }
        if (path == SYNC) {
            return sync(keys, ttlMs, local, primary, queryTime);
        }
        if (path == ASYNC) {
            return async(keys, ttlMs, local, primary, queryTime);
        }
        throw new IllegalArgumentException("probe path must be 1 (sync, V1) or 2 (async, V2)");
    }

    private static List<Object> result(long before, long after, long readable, boolean fresh) {
        List<Object> out = new ArrayList<>();
        out.add(before);
        out.add(after);
        out.add(readable);
        out.add(fresh);
        return out;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> sync(int keys, long ttlMs, String local, String primary,
                                     long queryTime) throws Exception {
        FlinkBackend.Options o = new FlinkBackend.Options();
        o.forst = true;
        o.dir = local;
        o.primaryDir = primary.isEmpty() ? null : primary;
        o.queryTimeAfterNumEntries = queryTime;
        try (FlinkBackend b = new FlinkBackend(o)) {
            b.register(0, FlinkBackend.VALUE, "probe", Wire.LONG, 0, 0, ttl(ttlMs, queryTime));
            ValueState<Object> state = (ValueState<Object>) b.state(0, FlinkBackend.VALUE).state;
            b.time.now = 0L;
            for (long k = 0; k < keys; k++) {
                b.backend.setCurrentKey(k);
                state.update(k);
            }
            b.time.now = ttlMs + 1;
            b.backend.setCurrentKey((long) keys);
            state.update((long) keys);
            b.flush();
            long before = ForStAccess.rawEntries(b.backend, "probe");
            b.compact();
            long after = ForStAccess.rawEntries(b.backend, "probe");
            long readable = 0;
            for (long k = 0; k < keys; k++) {
                b.backend.setCurrentKey(k);
                if (state.value() != null) {
                    readable++;
                }
            }
            b.backend.setCurrentKey((long) keys);
            return result(before, after, readable, state.value() != null);
        }
    }

    private static List<Object> async(int keys, long ttlMs, String local, String primary,
                                      long queryTime) throws Exception {
        org.forstdb.RocksDB.loadLibrary();
        FlinkBackend.LogicalTime time = new FlinkBackend.LogicalTime();
        Configuration conf = new Configuration();
        conf.set(ForStConfigurableOptions.COMPACT_FILTER_QUERY_TIME_AFTER_NUM_ENTRIES, queryTime);
        File dir = new File(local);
        if (!dir.isDirectory() && !dir.mkdirs()) {
            throw new IllegalArgumentException("cannot create ForSt folder " + dir);
        }
        Path localBase = new Path(dir.getAbsoluteFile().toURI());
        Path remote = primary.isEmpty() ? null
                : new Path(new File(primary).getAbsoluteFile().toURI());
        ForStResourceContainer res = new ForStResourceContainer(conf, null, null,
                new ForStPathContainer(localBase, localBase, remote, remote),
                RecoveryClaimMode.DEFAULT, null, new UnregisteredMetricsGroup(), false);
        CloseableRegistry registry = new CloseableRegistry();
        ForStKeyedStateBackend<Long> kb = new ForStKeyedStateBackendBuilder<>(
                "statebench-v2", ForStTtlProbe.class.getClassLoader(), res,
                name -> res.getColumnOptions(), LongSerializer.INSTANCE, 128,
                KeyGroupRange.of(0, 127), new ExecutionConfig(),
                ForStPriorityQueueConfig.buildWithPriorityQueueType(
                        ForStStateBackend.PriorityQueueStateType.ForStDB),
                time, new UnregisteredMetricsGroup(), (name, value) -> {},
                Collections.emptyList(), registry).build();
        try {
            MailboxExecutor mailbox = new MailboxExecutorImpl(new TaskMailboxImpl(), 0,
                    StreamTaskActionExecutor.IMMEDIATE);
            StateExecutionController<Long> aec = new StateExecutionController<>(mailbox,
                    (message, error) -> {}, kb.createStateExecutor(), new DeclarationManager(),
                    EpochManager.ParallelMode.SERIAL_BETWEEN_EPOCH, 128, 100, 0L, 1, null, null);
            kb.setup(aec);
            org.apache.flink.api.common.state.v2.ValueStateDescriptor<Long> desc =
                    new org.apache.flink.api.common.state.v2.ValueStateDescriptor<>("probe",
                            LongSerializer.INSTANCE);
            desc.enableTimeToLive(ttl(ttlMs, queryTime));
            org.apache.flink.api.common.state.v2.ValueState<Long> state = kb.getOrCreateKeyedState(
                    VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, desc);
            time.now = 0L;
            for (long k = 0; k < keys; k++) {
                RecordContext<Long> ctx = enter(aec, k);
                state.update(k);
                leave(aec, ctx);
            }
            time.now = ttlMs + 1;
            RecordContext<Long> fresh = enter(aec, (long) keys);
            state.update((long) keys);
            leave(aec, fresh);
            ForStAccess.flush(kb);
            long before = ForStAccess.rawEntries(kb, "probe");
            ForStAccess.compact(kb, "probe");
            long after = ForStAccess.rawEntries(kb, "probe");
            long readable = 0;
            for (long k = 0; k < keys; k++) {
                RecordContext<Long> ctx = enter(aec, k);
                if (state.value() != null) {
                    readable++;
                }
                leave(aec, ctx);
            }
            RecordContext<Long> last = enter(aec, (long) keys);
            boolean freshReadable = state.value() != null;
            leave(aec, last);
            return result(before, after, readable, freshReadable);
        } finally {
            kb.dispose();
            registry.close();
            res.close();
        }
    }

    private static RecordContext<Long> enter(StateExecutionController<Long> aec, long key) {
        RecordContext<Long> ctx = aec.buildContext(key, key);
        ctx.retain();
        aec.setCurrentContext(ctx);
        return ctx;
    }

    private static void leave(StateExecutionController<Long> aec, RecordContext<Long> ctx)
            throws Exception {
        ctx.release();
        aec.drainInflightRecords(0);
    }
}
