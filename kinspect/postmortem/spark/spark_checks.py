"""What this machine can do for the post-mortem: `kinspect doctor`'s Spark-side checks.

Here because only the post-mortem imports pyspark; they are `Check` values like the lab's
(kinspect.lab.host_checks) and join its diagnosis. None starts Spark.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys

from kinspect.lab.host_checks import (
    PYSPARK,
    SPARK_ARCHIVE,
    SPARK_MEMORY,
    Check,
    Status,
    guarded,
    memory_check,
    pip_fix,
)
from kinspect.lab.nodes import jvm_size_mib

ENABLES = "the post-mortem (kinspect postmortem RUN_DIR, a scenario's verdict and report)"
# The driver JVM's memory beyond its heap, and the Python side beside it: an estimate.
SPARK_OVERHEAD_MIB = 700


def check_pyspark() -> Check:
    if importlib.util.find_spec("pyspark") is None:
        return Check(PYSPARK, Status.MISSING, "pyspark is not installed",
                     pip_fix("pyspark"), ENABLES)
    import pyspark

    return Check(PYSPARK, Status.OK, f"pyspark {pyspark.__version__} imports", enables=ENABLES)


def check_archive() -> Check:
    enables = "a post-mortem's Spark starting about 4 s sooner (the driver's class archive)"
    if importlib.util.find_spec("pyspark") is None:
        return Check(SPARK_ARCHIVE, Status.UNKNOWN, f"not checked: no pyspark (see {PYSPARK})",
                     enables=enables)
    from kinspect.postmortem.spark import jvm_archive

    path = jvm_archive.archive_path()
    if path.is_file():
        return Check(SPARK_ARCHIVE, Status.OK, f"{path} ({path.stat().st_size // 2**20} MiB)",
                     enables=enables)
    return Check(SPARK_ARCHIVE, Status.WARN, f"not made for this pyspark and java ({path})",
                 f"{sys.executable} -m kinspect.postmortem.spark.jvm_archive  (once, about a "
                 "minute; make setup does it)", enables)


def driver_memory_mib() -> int:
    """The post-mortem's Spark driver heap (job.start_spark's default) plus its overhead."""
    from kinspect.postmortem.spark import job

    memory = inspect.signature(job.start_spark).parameters["memory"].default
    return jvm_size_mib(str(memory)) + SPARK_OVERHEAD_MIB


def check_spark_memory() -> Check:
    return memory_check(SPARK_MEMORY, driver_memory_mib(), "a post-mortem's Spark",
                        "(close programs, or `kinspect lab down` before the post-mortem)", ENABLES)


def spark_checks() -> list[Check]:
    return [guarded(name, probe) for name, probe in (
        (PYSPARK, check_pyspark), (SPARK_ARCHIVE, check_archive), (SPARK_MEMORY, check_spark_memory))]
