"""Independent oracles: what kinspect reports, recounted by tools that are not kinspect.

- the final log as kcat reads it back (librdkafka's CLI, not our consumer);
- the ledger recounted by DuckDB straight from its Parquet files (not pyarrow, not Spark);
- the kept replica snapshots read by Kafka's own DumpLogSegments (not our segment reader).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

IDENT = re.compile(r"^([0-9a-f]{8})-(\d+)-(\d+)\|")


def kcat_ids(bootstrap: str, topic: str, run_id: str, via: tuple[str, ...] = ()) -> Counter[str]:
    """How many times each id of the run is in the topic, read from the beginning by kcat
    (run through `via`, e.g. nsenter into a rootless lab's network)."""
    out = subprocess.run([*via, "kcat", "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e",
                          "-q", "-f", "%s\n"], capture_output=True, text=True, timeout=180,
                         check=True).stdout
    counts: Counter[str] = Counter()
    for line in out.splitlines():
        found = IDENT.match(line)
        if found and found[1] == run_id:
            counts[f"{found[1]}-{found[2]}-{found[3]}"] += 1
    return counts


def duckdb_recount(run_dir: Path, in_log: Counter[str]) -> dict[str, int]:
    """The verdict's counts, from the ledger's Parquet files and kcat's ids, in DuckDB SQL."""
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE log (id VARCHAR, copies INTEGER)")
    con.executemany("INSERT INTO log VALUES (?, ?)", list(in_log.items()))
    ledger = str(run_dir / "ledger" / "p*.parquet")
    row = con.execute(f"""
        WITH ledger AS (SELECT id, status FROM read_parquet('{ledger}'))
        SELECT count(*) FILTER (WHERE status = 'acked'),
               count(*) FILTER (WHERE status = 'acked' AND id NOT IN (SELECT id FROM log)),
               (SELECT count(*) FROM log l WHERE l.id NOT IN
                    (SELECT id FROM ledger WHERE status = 'acked')),
               (SELECT coalesce(sum(copies - 1), 0) FROM log),
               (SELECT coalesce(sum(copies), 0) FROM log)
        FROM ledger""").fetchone()
    assert row is not None
    keys = ("acked", "acked_lost", "unacked_or_unknown_present", "duplicates", "in_log")
    return dict(zip(keys, (int(v) for v in row), strict=True))


def duckdb_answers(run_dir: Path, in_log: Counter[str]) -> dict[str, int]:
    """Each send's three-valued outcome (ok, failed, indefinite: Jepsen's :ok, :fail, :info)
    recounted in DuckDB SQL from the ledger's Parquet rows, their footers' sent_upto and the
    producers' write-ahead marks, against the ids the log holds (the run's, as kcat_ids gives
    them: `<run>-<producer>-<seq>`). A seq sent with no row is indefinite; a failure is
    indefinite when its error is one of INDEFINITE_ERRORS."""
    import duckdb
    import pyarrow as pa

    from kinspect.model.sends import INDEFINITE_ERRORS

    ledger = str(run_dir / "ledger" / "p*.parquet")
    con = duckdb.connect()
    upto = _sent_upto(con, run_dir, ledger)
    held = [i.rsplit("-", 2)[-2:] for i in in_log]
    con.register("log", pa.table({"producer": [int(p) for p, _ in held],
                                  "seq": [int(q) for _, q in held]}))
    con.register("upto", pa.table({"producer": list(upto), "upto": list(upto.values())}))
    errors = ", ".join(f"'{name}'" for name in INDEFINITE_ERRORS)
    row = con.execute(f"""
        WITH rows AS (
            SELECT producer, seq,
                   CASE WHEN status = 'acked' THEN 'ok'
                        WHEN status = 'failed' AND error IN ({errors}) THEN 'indefinite'
                        WHEN status = 'failed' THEN 'failed'
                        ELSE 'indefinite' END AS answer
            FROM read_parquet('{ledger}')),
        unrecorded AS (
            SELECT u.producer, s.seq, 'indefinite' AS answer
            FROM upto u, range(0, u.upto + 1) s(seq)
            WHERE NOT EXISTS (SELECT 1 FROM rows r WHERE r.producer = u.producer
                                                     AND r.seq = s.seq)),
        every AS (SELECT e.*, l.seq IS NOT NULL AS held
                  FROM (SELECT * FROM rows UNION ALL SELECT * FROM unrecorded) e
                  LEFT JOIN (SELECT DISTINCT producer, seq FROM log) l
                  ON e.producer = l.producer AND e.seq = l.seq)
        SELECT count(*) FILTER (WHERE answer = 'ok'),
               count(*) FILTER (WHERE answer = 'failed'),
               count(*) FILTER (WHERE answer = 'indefinite'),
               count(*) FILTER (WHERE answer = 'indefinite' AND held),
               count(*) FILTER (WHERE answer = 'failed' AND held)
        FROM every""").fetchone()
    assert row is not None
    keys = ("ok", "failed_definite", "indefinite", "indefinite_present", "failed_present")
    return dict(zip(keys, (int(v) for v in row), strict=True))


def duckdb_rewritten(run_dir: Path, records: list[tuple[int, int, str | None]]) -> int:
    """Acknowledged offsets that hold another record in the log (Jepsen's inconsistent
    offsets), in DuckDB SQL: the ledger's acked (partition, offset, id) rows joined with the
    log's (partition, offset, id) records, as kcat_records reads them back (or a run dir's
    hand-made final log); each offset once."""
    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    con.register("log", pa.table({"partition": [p for p, _, _ in records],
                                  "offset": [o for _, o, _ in records],
                                  "id": pa.array([i for _, _, i in records], pa.string())}))
    ledger = str(run_dir / "ledger" / "p*.parquet")
    row = con.execute(f"""
        SELECT count(DISTINCT (a.partition, a."offset"))
        FROM read_parquet('{ledger}') a
        JOIN log l ON l.partition = a.partition AND l."offset" = a."offset"
        WHERE a.status = 'acked' AND l.id IS DISTINCT FROM a.id""").fetchone()
    assert row is not None
    return int(row[0])


def _sent_upto(con: Any, run_dir: Path, ledger: str) -> dict[int, int]:
    """Per producer, the last seq it may have sent: the largest `kinspect.sent_upto` of its
    chunks' footers (DuckDB's parquet_kv_metadata) and its mark file's first 20 digits."""
    rows = con.execute(f"""
        SELECT regexp_extract(file_name, 'p([0-9]+)-[0-9]+[.]parquet$', 1)::INT,
               max(decode(value)::BIGINT)
        FROM parquet_kv_metadata('{ledger}') WHERE decode(key) = 'kinspect.sent_upto'
        GROUP BY 1""").fetchall()
    upto = {int(p): int(u) for p, u in rows}
    for mark in (run_dir / "ledger").glob("_p*.mark"):
        producer = int(mark.name[2:5])
        upto[producer] = max(upto.get(producer, -1), int(mark.read_bytes()[:20]))
    return upto


def dump_segments(files: list[Path]) -> list[dict[str, Any]]:
    """Every record of these segment files as Kafka's DumpLogSegments prints it:
    {file, offset, epoch (the batch's partitionLeaderEpoch), payload}."""
    from kinspect.lab import dist

    kafka = dist.ensure()
    command = kafka.tool_command(kafka.dump_log_segments, "--print-data-log",
                                 "--files", ",".join(str(f) for f in files))
    out = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True).stdout
    records, epoch, current = [], -1, ""
    for line in out.splitlines():
        if line.startswith("Dumping "):
            current = line.split(" ", 1)[1].strip()
        elif line.startswith("baseOffset:"):
            epoch = int(re.search(r"partitionLeaderEpoch: (-?\d+)", line)[1])  # type: ignore[index]
        elif line.startswith("| offset:"):
            offset = int(re.search(r"offset: (\d+)", line)[1])  # type: ignore[index]
            payload = line.split("payload: ", 1)[1] if "payload: " in line else ""
            records.append({"file": current, "offset": offset, "epoch": epoch, "payload": payload})
    return records


def held_by(run_dir: Path, broker: int, run_id: str) -> dict[str, int]:
    """The run's ids found in broker N's kept replica snapshots, by DumpLogSegments, with the
    leader epoch of the batch that holds each ({} when no snapshot of it was kept)."""
    segments = sorted((run_dir / "replicas").glob(f"*/kafka{broker}/*/*.log"))
    held: dict[str, int] = {}
    for record in dump_segments(segments) if segments else []:
        found = IDENT.match(record["payload"])
        if found and found[1] == run_id:
            held[f"{found[1]}-{found[2]}-{found[3]}"] = record["epoch"]
    return held


def kcat_records(bootstrap: str, topic: str,
                 isolation: str = "read_uncommitted") -> list[tuple[int, int, str | None]]:
    """(partition, offset, id or None) of every record kcat reads from the beginning."""
    out = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e",
                          "-q", "-X", f"isolation.level={isolation}", "-f", "%p %o %s\n"],
                         capture_output=True, text=True, timeout=180, check=True).stdout
    records = []
    for line in out.splitlines():
        partition, offset, value = [*line.split(" ", 2), ""][:3]
        found = IDENT.match(value)
        records.append((int(partition), int(offset),
                        f"{found[1]}-{found[2]}-{found[3]}" if found else None))
    return records


def group_offsets(bootstrap: str, group: str) -> dict[int, int]:
    """The group's committed offset per partition, as Kafka's own kafka-consumer-groups
    (ConsumerGroupCommand) describes it."""
    from kinspect.lab import dist
    from kinspect.lab.dist import CONSUMER_GROUPS

    command = dist.ensure().tool_command(CONSUMER_GROUPS, "--bootstrap-server", bootstrap,
                                         "--describe", "--group", group)
    out = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    offsets = {}
    for line in out.splitlines():
        cells = line.split()
        if len(cells) >= 4 and cells[0] == group and cells[3].isdigit():
            offsets[int(cells[2])] = int(cells[3])
    return offsets


def duckdb_consumer_recount(run_dir: Path, log: list[tuple[int, int, str | None]],
                            starts: dict[int, int], ends: dict[int, int],
                            output: list[tuple[int, int, str | None]] | None = None,
                            ) -> dict[str, int]:
    """The consumer side's counts, in DuckDB SQL: the input log (kcat's), the group's range
    (from Kafka's own tool), and the consumer ledger's CSV files as written; with `output`,
    the committed output (kcat's, read_committed) is the evidence of processing instead."""
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE log (p INTEGER, o BIGINT, id VARCHAR)")
    con.executemany("INSERT INTO log VALUES (?, ?, ?)", log)
    con.execute("CREATE TABLE ranges (p INTEGER, lo BIGINT, hi BIGINT)")
    con.executemany("INSERT INTO ranges VALUES (?, ?, ?)",
                    [(p, starts.get(p, 0), ends.get(p, starts.get(p, 0))) for p in ends])
    records = str(run_dir / "consumer" / "ledger" / "c*-i*.records.csv")
    if output is None:
        evidence = (f"SELECT \"partition\" AS p, \"offset\" AS o, count(*) AS ok FROM "
                    f"read_csv('{records}', header = true) WHERE outcome = 'processed' "
                    "GROUP BY 1, 2")
        join = "LEFT JOIN evidence e ON e.p = a.p AND e.o = a.o"
    else:
        con.execute("CREATE TABLE output (p INTEGER, o BIGINT, id VARCHAR)")
        con.executemany("INSERT INTO output VALUES (?, ?, ?)", output)
        evidence = "SELECT id, count(*) AS ok FROM output WHERE id IS NOT NULL GROUP BY 1"
        join = "LEFT JOIN evidence e ON e.id = a.id"
    row = con.execute(f"""
        WITH answered AS (SELECT l.* FROM log l JOIN ranges r ON l.p = r.p
                          WHERE l.o >= r.lo AND l.o < r.hi),
             evidence AS ({evidence}),
             matched AS (SELECT coalesce(e.ok, 0) AS ok FROM answered a {join})
        SELECT count(*), count(*) FILTER (WHERE ok > 0), count(*) FILTER (WHERE ok = 0),
               count(*) FILTER (WHERE ok > 1) FROM matched""").fetchone()
    assert row is not None
    keys = ("answered_for", "processed", "never_processed", "processed_twice")
    return dict(zip(keys, (int(v) for v in row), strict=True))


TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
LOG_DIRS_COMMAND = "org.apache.kafka.tools.LogDirsCommand"
REASSIGN_COMMAND = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
# kafka-topics --describe's filters: which partitions each flag lists
TOPIC_FILTERS = ("--under-replicated-partitions", "--under-min-isr-partitions",
                 "--at-min-isr-partitions", "--unavailable-partitions")


def kafka_tool(main_class: str, *args: str, kafka: str | None = None, timeout: float = 120,
               check: bool = True) -> str:
    """stdout of one of Kafka's own tools, from the jars of that release (None: the 3.x pin)."""
    from kinspect.lab import dist

    command = dist.ensure(version=kafka).tool_command(main_class, *args)
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          check=check).stdout


def _ids(cell: str | None) -> tuple[int, ...] | None:
    """A comma-separated broker list; None for a field the line lacks or says N/A."""
    if cell is None or cell.strip() == "N/A":
        return None
    return tuple(int(b) for b in cell.split(",") if b.strip())


def _cell(cell: str) -> tuple[str, str]:
    name, _, value = cell.partition(":")
    return name.strip(), value.strip()


def topic_line(line: str) -> dict[str, Any] | None:
    """One partition line of `kafka-topics --describe` (3.9 and 4.x TopicCommand):
    "\\tTopic: t\\tPartition: 0\\tLeader: 1\\tReplicas: 1,2,3\\tIsr: 1,2\\t[Adding Replicas: 4\\t
    Removing Replicas: 3\\t]Elr: 3\\tLastKnownElr: " (Elr/LastKnownElr N/A when the cluster did not
    say them: ZooKeeper mode). None for any other line (the topic's header, log lines)."""
    cells = dict(_cell(cell) for cell in line.strip("\n").split("\t") if cell)
    if "Partition" not in cells or "Topic" not in cells:
        return None
    leader = cells.get("Leader", "none")
    return {"topic": cells["Topic"], "partition": int(cells["Partition"]),
            "leader": None if leader in ("none", "-1") else int(leader),
            "replicas": _ids(cells.get("Replicas", "")), "isr": _ids(cells.get("Isr", "")),
            "adding": _ids(cells.get("Adding Replicas", "")),
            "removing": _ids(cells.get("Removing Replicas", "")),
            "elr": _ids(cells.get("Elr")), "last_known_elr": _ids(cells.get("LastKnownElr"))}


def kafka_topics(bootstrap: str, *flags: str, topic: str | None = None, kafka: str | None = None,
                 command_config: Path | None = None) -> list[dict[str, Any]]:
    """Each partition line of Kafka's own `kafka-topics --describe` (TopicCommand of that
    release) with the given filter flags: {topic, partition, leader (None: none), replicas, isr,
    adding, removing (() when not being moved), elr, last_known_elr (None when not said)}."""
    args = ["--bootstrap-server", bootstrap, "--describe", *flags]
    if topic is not None:
        args += ["--topic", topic]
    if command_config is not None:
        args += ["--command-config", str(command_config)]
    out = kafka_tool(TOPIC_COMMAND, *args, kafka=kafka)
    return [row for row in map(topic_line, out.splitlines()) if row is not None]


def flagged_by_kafka_topics(bootstrap: str, filters: tuple[str, ...] = TOPIC_FILTERS,
                            kafka: str | None = None, command_config: Path | None = None
                            ) -> dict[str, set[str]]:
    """filter flag -> the "topic-partition" names kafka-topics --describe lists under it."""
    return {flag: {f"{r['topic']}-{r['partition']}"
                   for r in kafka_topics(bootstrap, flag, kafka=kafka,
                                         command_config=command_config)}
            for flag in filters}


def kafka_log_dirs(bootstrap: str, brokers: list[int],
                   kafka: str | None = None) -> dict[int, dict[tuple[str, int], dict[str, Any]]]:
    """Each broker's replicas as Kafka's own kafka-log-dirs --describe says them (its JSON):
    broker -> (topic, partition) -> {log_dir, size, offset_lag, future}."""
    out = kafka_tool(LOG_DIRS_COMMAND, "--bootstrap-server", bootstrap, "--describe",
                     "--broker-list", ",".join(map(str, brokers)), kafka=kafka)
    described = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    replicas: dict[int, dict[tuple[str, int], dict[str, Any]]] = {}
    for broker in described["brokers"]:
        held = replicas.setdefault(int(broker["broker"]), {})
        for log_dir in broker["logDirs"]:
            for p in log_dir["partitions"]:
                topic, _, index = p["partition"].rpartition("-")
                held[(topic, int(index))] = {"log_dir": log_dir["logDir"], "size": p["size"],
                                             "offset_lag": p["offsetLag"],
                                             "future": p["isFuture"]}
    return replicas


def metadata_elections(log_dir: Path, topic: str, kafka: str = "4") -> dict[str, int]:
    """The controller's own metadata log, decoded by Kafka's DumpLogSegments
    (--cluster-metadata-decoder), replayed for partition 0 of `topic`: how many leaders it
    chose from the eligible leader replicas, and how many other leader changes it made."""
    from kinspect.lab import dist

    kafka_dist = dist.ensure(version=kafka)
    files = sorted(log_dir.glob("*.log"))
    out = kafka_tool(kafka_dist.dump_log_segments, "--cluster-metadata-decoder", "--files",
                     ",".join(map(str, files)), kafka=kafka)
    records = [json.loads(line.split("payload: ", 1)[1]) for line in out.splitlines()
               if "payload: {" in line]
    topic_id = next(r["data"]["topicId"] for r in records
                    if r["type"] == "TOPIC_RECORD" and r["data"]["name"] == topic)
    elr: list[int] = []
    counts = {"from_elr": 0, "other": 0}
    for record in records:
        data = record["data"]
        if record["type"] not in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD") or \
                data.get("topicId") != topic_id or data.get("partitionId") != 0:
            continue
        leader = data.get("leader")
        if record["type"] == "PARTITION_CHANGE_RECORD" and leader is not None and leader >= 0:
            counts["from_elr" if leader in elr else "other"] += 1
        elr = data.get("eligibleLeaderReplicas", elr)
    return counts
