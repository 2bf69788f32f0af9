"""One run: plan -> source -> keying -> operator (hot loop, checkpoints, metrics), on an engine."""
