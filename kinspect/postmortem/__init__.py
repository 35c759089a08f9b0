"""The PySpark post-mortem: what was acknowledged, what the cluster kept, and why they differ.

In: a run dir (the ack ledger, the final log read back by verify, the timeline, the fault
journal, the brokers' logs and kept replica snapshots). Out: `Report` (report.json, report.md,
timeline.png). Four concerns, one sub-package each, and the orchestration here:

- `evidence/`: reading the run dir (inputs, broker log lines, replica snapshots) and keeping it.
- `spark/`: Spark plumbing (sessions, the warm server and its client, the driver archive).
- `matching/`: the run's frames (frames.py) and the Spark queries that match acknowledgements
  with the final log by id.
- `story/`: the report's values, the timeline, the lanes chart and the plain-words paragraph.
- `run.py` runs one post-mortem; `finish.py` finishes a run (verify, keep evidence, post-mortem);
  `warm.py` warms a session on a made-up run (the warm server's start, the class archive's dump).
"""

from typing import TYPE_CHECKING, Any

from kinspect.postmortem.story.values import Report

if TYPE_CHECKING:
    from kinspect.postmortem.run import run_postmortem

__all__ = ["Report", "run_postmortem"]


def __getattr__(name: str) -> Any:
    """`run_postmortem` on first use: a light install reads a Report without pyspark or pyarrow."""
    if name == "run_postmortem":
        from kinspect.postmortem.run import run_postmortem

        return run_postmortem
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
