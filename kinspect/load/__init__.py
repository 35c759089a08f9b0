"""The load: producers (and consumers/) that keep a ledger of every message, in a run dir.

In: load settings (validated once and saved: runsettings.py) and a cluster to write to. Out: a
run dir (rundir.py) holding the ack ledger (one Parquet row per message: ack_ledger.py), the
run's counts and trend (runstats.py, trend.py), the observer's events while it ran
(run_timeline.py) and, after `kinspect verify`, the final log read back by identity
(verify.py): what the post-mortem reads. A load runs as processes of its own (producer_run.py;
load_process.py starts one for a screen); liveloss.py says loss as it happens. No Textual and no
Spark here.
"""
