"""The run dir as evidence: the inputs a post-mortem reads (settings, ledger and final-log
files, timeline, fault journal), the brokers' log lines as timeline events, the kept replica
snapshots, and keeping the lab's evidence in the run dir when a run ends.

In: a run dir (and the lab, to keep its evidence). Out: `Inputs`, `TimelineEvent`s from logs,
held-records tables. No Spark here."""
