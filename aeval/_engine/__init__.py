"""The engine: the Scorer, one run and its workers, threads, callables, executors, sinks,
shards, the synchronous door, the fluent builder, redaction and progress."""
