"""One run: plan, source, keying, operator (hot loop, checkpoints, metrics); runner over engines."""
