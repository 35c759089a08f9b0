"""Spark plumbing: a session with small heaps, the warm Spark server kept between post-mortems
and its client, the driver's class archive, warm-up, and running jobs side by side.

In: a master URL and memory settings. Out: a SparkSession (or a server's answer); nothing here
knows what a ledger is, except the frames `job` reads for the matching."""
