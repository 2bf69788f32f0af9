package statebench.spark;

import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.types.StructType;

import scala.Tuple3;

/**
 * Starts the throughput mode's query with the JVM SpecProcessor, shaped as the Python one
 * (backends/spark/throughput.py): the staged files one per micro-batch, grouped by key,
 * transformWithState in processing time, a memory sink of (ord, t, r). Called from Python
 * through py4j on an instance (the class comes from its own class loader, so there is no
 * static entry point py4j could name); the class loader is made the thread's context class
 * loader while the query starts, and the query's thread inherits it.
 */
public final class ThroughputQuery {
    /** The grouping key: the input's first column. */
    public static final class KeyOf implements MapFunction<Row, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long call(Row row) {
            return row.getLong(0);
        }
    }

    public StreamingQuery start(SparkSession spark, String inputDir, String schemaDdl,
                                String checkpoint, String queryName, String valueType,
                                String stateTypes, String opCodes, long ttlMs, int extraReads)
            throws Exception {
        Thread thread = Thread.currentThread();
        ClassLoader previous = thread.getContextClassLoader();
        thread.setContextClassLoader(ThroughputQuery.class.getClassLoader());
        try {
            Dataset<Row> input = spark.readStream().schema(StructType.fromDDL(schemaDdl))
                .option("maxFilesPerTrigger", 1).parquet(inputDir);
            Dataset<Tuple3<Long, Long, Long>> out = input
                .groupByKey(new KeyOf(), Encoders.LONG())
                .transformWithState(
                    new SpecProcessor(valueType, stateTypes, opCodes, ttlMs, extraReads),
                    TimeMode.ProcessingTime(), OutputMode.Append(),
                    Encoders.tuple(Encoders.LONG(), Encoders.LONG(), Encoders.LONG()));
            return out.toDF("ord", "t", "r").writeStream().format("memory")
                .queryName(queryName).outputMode("append")
                .option("checkpointLocation", checkpoint).start();
        } finally {
            thread.setContextClassLoader(previous);
        }
    }
}
