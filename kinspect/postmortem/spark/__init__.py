"""Spark plumbing: a session with small heaps (job.py), the warm Spark server kept between
post-mortems and its client, a cluster's master and executors, the doctor's Spark checks, the
driver's class archive and running jobs side by side.

In: a master URL and memory settings. Out: a SparkSession (or a server's answer). Nothing here
knows what a ledger is (an import-linter contract holds it): the frames the matching reads are
matching/frames.py, the warm-up's made-up run postmortem/warm.py."""
