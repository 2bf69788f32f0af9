package statebench.flink;

/**
 * A family of commands the worker dispatches by opcode. The state-operation family lives in
 * {@link Worker}; a second family (applying a batch of workload events with metrics) plugs in by
 * implementing this interface and registering its opcode range with {@link Worker#register}.
 */
interface CommandFamily {
    /**
     * Executes one command whose opcode byte has been read; reads its arguments from {@code in}
     * and appends any result to {@code out}.
     */
    void execute(Worker worker, int opcode, Wire.In in, Wire.Out out) throws Exception;
}
