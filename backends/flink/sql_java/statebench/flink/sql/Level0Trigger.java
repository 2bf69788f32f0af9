package statebench.flink.sql;

import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.state.rocksdb.ConfigurableRocksDBOptionsFactory;
import org.apache.flink.state.rocksdb.RocksDBOptionsFactory;

import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;

import java.util.Collection;

/**
 * level0_file_num_compaction_trigger from the configuration key {@link #KEY}, as the Flink
 * lanes set it (backends/flink/register.py maps a spec's [rocksdb] option to that key): Flink
 * has no configuration option for it, so the SQL job's RocksDB backend gets this options
 * factory whenever the key is given.
 */
public final class Level0Trigger implements ConfigurableRocksDBOptionsFactory {
    static final String KEY = "statebench.level0-file-num-compaction-trigger";
    private static final long serialVersionUID = 1L;
    private int trigger = -1;

    @Override
    public RocksDBOptionsFactory configure(ReadableConfig config) {
        Level0Trigger out = new Level0Trigger();
        out.trigger = Integer.parseInt(config.get(ConfigOptions.key(KEY).stringType()
                .defaultValue("-1")));
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
