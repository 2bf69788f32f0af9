package statebench.flink.sql;

import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.state.AsyncKeyedStateBackend;
import org.apache.flink.runtime.state.CheckpointableKeyedStateBackend;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.OperatorStateBackend;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.StateBackendFactory;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackendFactory;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackendFactory;

import java.io.IOException;

/**
 * Flink's HashMap or RocksDB backend with the job's paced clock as its TtlTimeProvider.
 *
 * <p>Why: SQL's state TTL reads the keyed backend's TtlTimeProvider (the wall clock by
 * default, and a job has no public hook for it), so {@code state.backend.type} names this
 * factory, which builds Flink's own backend ({@code statebench.sql.backend}: hashmap or
 * rocksdb, configured from the same configuration) and hands it the same parameters with
 * {@link SqlJob.Clock} instead. Everything else, checkpoints included, is Flink's backend's.
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
        return new Paced(delegate);
    }

    /** The wrapped backend (serialisable, as Flink ships backends with the job). */
    public static final class Paced implements StateBackend {
        private static final long serialVersionUID = 1L;
        private final StateBackend delegate;

        Paced(StateBackend delegate) {
            this.delegate = delegate;
        }

        private static <K> KeyedStateBackendParameters<K> withClock(
                KeyedStateBackendParameters<K> parameters) {
            return new KeyedStateBackendParametersImpl<>(parameters)
                    .setTtlTimeProvider(SqlJob.Clock::now);
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
