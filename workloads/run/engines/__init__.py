"""Where a run's tasks execute: inside Spark executors or in this process (one loop over both)."""
