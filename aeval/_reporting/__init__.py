"""What a run produces: results and rows, the row codec, run information, the aggregator,
the report, judge statistics and the report's assertions."""
