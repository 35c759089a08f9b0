"""Consumers that keep a ledger: what a consumer group received, processed and committed.

In: consumer settings (how the group commits, fails and crashes: settings.py) and the run's
topic. Out: the consumer ledger in the run dir (consumer_ledger.py), live counters (stats.py)
and a summary. group_run.py runs the worker processes (consumer_worker.py) and restarts them
after a crash, group_process.py starts a group for a screen, transform.py copies records to an
output topic in one transaction. The post-mortem's consumer side reads the ledger.
"""
