package statebench.flink.sql;

import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.state.AsyncKeyedStateBackend;
import org.apache.flink.runtime.state.CheckpointableKeyedStateBackend;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.OperatorStateBackend;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.StateBackendFactory;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackendFactory;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackendFactory;

import java.io.IOException;

/**
 * Flink's HashMap or RocksDB backend with the job's TTL clock as its TtlTimeProvider.
 *
 * <p>Why: SQL's state TTL reads the keyed backend's TtlTimeProvider (the wall clock by
 * default, and a job has no public hook for it), so {@code state.backend.type} names this
 * factory, which builds Flink's own backend ({@code statebench.sql.backend}: hashmap or
 * rocksdb, configured from the same configuration) and hands it the same parameters with the
 * job's TTL clock instead ({@code statebench.sql.ttl-clock}). Everything else, checkpoints
 * included, is Flink's backend's.
 *
 * <p>The clocks: {@code paced}, {@link SqlJob.Clock} (the paced wall clock, as statebench's
 * ProcessingTime runs); {@code event}, {@link EventClock}: the records' time as the keyed
 * operator has seen it, read from its task's input watermark, so a TTL expires what it
 * expires on the records' time, as the emulation's does under EventTime, however late the
 * job runs behind its paced clock. The RocksDB compaction filter reads the same provider.
 */
public final class PacedBackendFactory implements StateBackendFactory<StateBackend> {

    @Override
    public StateBackend createFromConfig(ReadableConfig config, ClassLoader loader)
            throws IllegalConfigurationException, IOException {
        String inner = SqlJob.confValue(config, SqlJob.INNER_BACKEND, "hashmap");
        StateBackend delegate;
        if (inner.equals("rocksdb")) {
            delegate = new EmbeddedRocksDBStateBackendFactory().createFromConfig(config, loader);
        } else if (inner.equals("hashmap")) {
            delegate = new HashMapStateBackendFactory().createFromConfig(config, loader);
        } else {
            throw new IllegalConfigurationException("unknown inner backend " + inner);
        }
        String clock = SqlJob.confValue(config, SqlJob.TTL_CLOCK, "paced");
        if (!clock.equals("paced") && !clock.equals("event")) {
            throw new IllegalConfigurationException("unknown TTL clock " + clock);
        }
        long offset = Long.parseLong(SqlJob.confValue(config, SqlJob.TTL_CLOCK_OFFSET, "1"));
        return new Paced(delegate, clock.equals("event"), offset);
    }

    /**
     * The records' time as a keyed operator has seen them: its task's input watermark (the
     * minimum over its inputs) plus {@code offsetMs}, never behind the job's start, and held at
     * its last value once the end-of-input watermark ({@code Long.MAX_VALUE}) arrives.
     *
     * <p>Why the watermark: a record's time is not visible to the state backend, but the
     * watermark is, in band: with {@code pipeline.auto-watermark-interval} 0 the SQL
     * watermark assigner ({@code WatermarkAssignerOperator.processElement}) emits a watermark
     * after each record that advances it, {@code max ts - bound - 1} (the source table's), so
     * the keyed operator processes each record right after the watermark of the record before
     * it, and {@code watermark + bound + 1} is the largest time the input has reached: the
     * emulation's TTL clock (the record's own time), one record behind. The task's
     * {@code currentInputWatermark} gauge ({@link StateReporter#inputWatermark}) is set in the
     * task's thread before the operator sees the watermark; the compaction filter reads it
     * from RocksDB's threads (the gauge is volatile).
     */
    static final class EventClock implements TtlTimeProvider {
        private final String attemptId;
        private final long offsetMs;
        private transient Gauge<?> gauge;
        private volatile long last = Long.MIN_VALUE;

        EventClock(String attemptId, long offsetMs) {
            this.attemptId = attemptId;
            this.offsetMs = offsetMs;
        }

        @Override
        public long currentTimestamp() {
            Gauge<?> g = gauge;
            if (g == null) {
                g = StateReporter.inputWatermark(attemptId);
                if (g == null) {
                    return Math.max(last, SqlJob.Clock.start());
                }
                gauge = g;
            }
            Object v = g.getValue();
            long wm = v instanceof Long ? (Long) v : Long.MIN_VALUE;
            if (wm != Long.MIN_VALUE && wm != Long.MAX_VALUE) {
                long now = wm + offsetMs;
                if (now > last) {
                    last = now;
                }
            }
            return Math.max(last, SqlJob.Clock.start());
        }
    }

    /** The wrapped backend (serialisable, as Flink ships backends with the job). */
    public static final class Paced implements StateBackend {
        private static final long serialVersionUID = 1L;
        private final StateBackend delegate;
        /** The event clock (else the paced one), and its offset past the watermark (ms). */
        private final boolean eventClock;
        private final long eventClockOffsetMs;

        Paced(StateBackend delegate, boolean eventClock, long eventClockOffsetMs) {
            this.delegate = delegate;
            this.eventClock = eventClock;
            this.eventClockOffsetMs = eventClockOffsetMs;
        }

        private <K> KeyedStateBackendParameters<K> withClock(
                KeyedStateBackendParameters<K> parameters) {
            TtlTimeProvider clock = !eventClock ? SqlJob.Clock::now
                    : new EventClock(parameters.getEnv().getExecutionId().toString(),
                            eventClockOffsetMs);
            return new KeyedStateBackendParametersImpl<>(parameters).setTtlTimeProvider(clock);
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
}
