"""A class-data archive of the Spark driver's JVM (Java's AppCDS), made once by `make setup`.

A fresh driver loads and verifies some 20,000 classes one by one: 4.2 s of a cold
post-mortem's start here, and more while its first queries load theirs. Mapped from an
archive that a warm-up run left behind, the start takes 2.3 s and the first queries 0.8 s
less (the 10 M-message post-mortem: 20 s -> 16.9 s). The archive holds this JDK's build and
this pyspark's class path; a JVM that does not match it says so at warning level (routed to
stderr, which a quiet session silences) and loads classes as before.

A truncated archive crashes the JVM that maps it (SIGBUS), so one is only ever used under
its final name: a child process (kinspect/postmortem/warm.py: the warm-up post-mortem, then
exit_and_dump here) dumps it to a temporary file, waits for its JVM to exit, checks that a JVM
starts with it, and renames it. In: this JDK and pyspark. Out: the archive's path and the
driver's JVM options.

    python -m kinspect.postmortem.spark.jvm_archive     # make it unless it exists (idempotent)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from kinspect.paths import cache_dir

DUMP_ENV = "KINSPECT_JVM_ARCHIVE_DUMP"  # set in the child that dumps: where to
# The child's module: it runs a warm-up post-mortem, which this floor knows only by name (a
# process of its own, not an import).
DUMPER = "kinspect.postmortem.warm"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home:
        return os.path.realpath(Path(home) / "bin" / "java")
    return os.path.realpath(shutil.which("java") or "java")


def archive_path() -> Path:
    """Named by pyspark's version and the java binary (path and time), so a new JDK or Spark
    makes a new archive instead of a refused one."""
    import pyspark

    java = _java()
    stamp = java
    if os.path.exists(java):
        stamp = f"{java}:{os.stat(java).st_mtime_ns}"
    key = hashlib.sha256(f"{pyspark.__version__}|{stamp}".encode()).hexdigest()[:12]
    return cache_dir() / "spark-cds" / f"driver-{pyspark.__version__}-{key}.jsa"


def driver_options() -> list[str]:
    """The driver JVM's options: the archive when there is one (or, in the child that makes
    it, where to dump), and JVM warnings on stderr instead of stdout (a `--json` answer)."""
    options = ["-Xlog:disable", "-Xlog:all=warning:stderr"]
    dump = os.environ.get(DUMP_ENV)
    if dump:
        options.append(f"-XX:ArchiveClassesAtExit={dump}")
    elif (path := archive_path()).is_file():
        options.append(f"-XX:SharedArchiveFile={path}")
    return options


def exit_and_dump(spark: Any, target: Path) -> None:
    """In the child that makes it (after its warm-up: kinspect/postmortem/warm.py): the
    session stopped and its JVM's exit waited for, which writes the archive at `target`."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    proc = getattr(gateway, "proc", None)
    if proc is None:
        raise SystemExit("no JVM process to wait for")
    proc.stdin.close()  # the gateway JVM ends when its stdin does, and dumps as it ends
    proc.wait(timeout=300)
    if not target.is_file():
        raise SystemExit(f"the JVM wrote no archive at {target}")


def build() -> Path | None:
    """Make the archive unless it exists; None (and one line on stderr) when it cannot."""
    path = archive_path()
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        done = subprocess.run([sys.executable, "-m", DUMPER, "--dump", str(tmp)],
                              env={**os.environ, DUMP_ENV: str(tmp)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=600)
        if done.returncode != 0 or not tmp.is_file():
            print(f"no Spark class archive (post-mortems start as before): {_last_line(done)}",
                  file=sys.stderr)
            return None
        check = subprocess.run([_java(), f"-XX:SharedArchiveFile={tmp}", "-Xlog:disable",
                                "-version"], capture_output=True, timeout=60)
        if check.returncode != 0:  # a damaged archive would crash every driver
            print("no Spark class archive: the dumped one does not load", file=sys.stderr)
            return None
        os.replace(tmp, path)
        return path
    finally:
        tmp.unlink(missing_ok=True)


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    """Why the child failed: the last line it said, if any."""
    lines = done.stderr.strip().splitlines()
    if not lines:
        return "the dump failed"
    return lines[-1]


def main() -> int:
    path = build()
    if path is not None:
        print(f"Spark driver class archive: {path} ({path.stat().st_size // 2**20} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
