"""Matching acknowledgements with the final log, by message id, in Spark.

In: the ledger's and the final log's Parquet frames, the leadership history. Out: small typed
results (counts per group, lost ranges, attribution rows, timing) for the story to tell."""
