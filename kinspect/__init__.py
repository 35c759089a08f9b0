"""kinspect: a terminal inspector and fault console for Apache Kafka (ZooKeeper or KRaft).

It shows live leaders, ISR and the controller as ZooKeeper or the KRaft quorum decided them and
as the brokers believe them, breaks a local lab for real, and judges each run by a post-mortem
of every acknowledged-but-lost message. In: a cluster (a profile, bootstrap servers, ZooKeeper)
or the lab. Out: the screen, `snapshot` and `health` as text or JSON, the exporter's metrics,
run dirs and their reports.

The layers, each importing only those below it (pyproject's import-linter contracts hold them):
cli > tui > lessons > target > scenarios > postmortem > lab | load > sources > clients > model,
on a shared base that imports no layer (validation, errors, extras, heap, paths, procs,
profiles). Each package's docstring says what flows in and out of it.
"""

__version__ = "0.1.0"
