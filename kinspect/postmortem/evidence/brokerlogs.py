"""Kafka broker log lines that explain loss, parsed into timeline events (pure Python).

The formats are Kafka's own (3.x, with the 2.x variants still seen in the wild):
  [Partition test1-0 broker=2] Shrinking ISR from 1,2,3 to 2. Leader: (...)     kafka.cluster.Partition
  [Broker id=3] Leader test1-0 with topic id Some(x) starts at leader epoch 5 from offset 34669 ...
  [Broker id=2] Follower test1-0 starts at leader epoch 5 from offset ... Current leader is 3. ...
  [ReplicaFetcher ...] Truncating partition test1-0 with TruncationState(offset=34669, ...) due to ...
  [UnifiedLog partition=test1-0, dir=...] Truncating to offset 34669
  [Controller id=3] 3 successfully elected as the controller. Epoch incremented to 2 and ...
  [Controller id=3 epoch=2] Changed partition test1-0 from OnlinePartition to OnlinePartition with
      state LeaderAndIsr(leader=3, leaderEpoch=5, ...)
  Unable to reconnect to ZooKeeper service, session 0x1000 has expired    org.apache.zookeeper.ClientCnxn
  [ZooKeeperClient Kafka server] Session expired.                          kafka.zookeeper.ZooKeeperClient
KRaft (3.9) says the same facts in other words, on the controller nodes and the brokers:
  [QuorumController id=101] Becoming the active controller at epoch 3, next write offset 1.
  [QuorumController id=101] Fencing broker 2 because its session has timed out.  (4.x: "at
      epoch 11 because")
  [QuorumController id=101] The request from broker 2 to unfence has been granted because ...
  [BrokerLifecycleManager id=2] Unable to send a heartbeat because the RPC got timed out ...
  [QuorumController id=101] partition change for test1-0 with topic ID x: leader: 2 -> 3,
      leaderEpoch: 0 -> 1, partitionEpoch: 0 -> 1       (DEBUG: the lab logs it to controller.log)
(a leader's and a follower's "starts at leader epoch" and the truncations are as above).
A broker's session expiry is only those ZooKeeper lines (both logged once it reaches ZooKeeper again);
'Client session timed out' and '... Attempting reconnect except it is a SessionExpiredException'
are every lost connection, expired or not, so they do not count.

Timestamps: every lab JVM runs with -Duser.timezone=UTC (kinspect.lab.nodes.JVM_FLAGS) and docker
containers are UTC anyway, so stamps are read as UTC, never in this machine's zone.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kinspect.lab.topology import broker_id_of

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] (\w+) (.*)$")
_PARTITION_PREFIX = re.compile(r"\[Partition (\S+) broker=(\d+)\]")
_BROKER_PREFIX = re.compile(r"\[(?:Broker id|Partition \S+ broker|KafkaServer id)=(\d+)")
_ISR = re.compile(r"(Shrinking|Expanding) ISR from ([\d,]*) to ([\d,]*)")
_STARTS = re.compile(r"(?:(Leader|Follower) )?(\S+-\d+)(?: with topic id \S+)? starts at [Ll]eader "
                     r"[Ee]poch (\d+) from offset (\d+)")
_CURRENT_LEADER = re.compile(r"Current leader is (\d+)")
_TRUNC_FETCHER = re.compile(r"Truncating partition (\S+) with TruncationState\(offset=(\d+)")
_TRUNC_LOG = re.compile(r"(?:\[(?:UnifiedLog|Log) partition=([^,\]]+)[^\]]*\] )?Truncating to offset (\d+)")
_ELECTED = re.compile(r"(\d+) successfully elected as the controller\. Epoch incremented to (\d+)")
_CHANGED = re.compile(r"Changed partition (\S+) from (\w+) to (\w+) with state "
                      r"LeaderAndIsr\(leader=(-?\d+), leaderEpoch=(\d+)")
_ZK_EXPIRED = re.compile(r"Unable to reconnect to ZooKeeper service, session 0x[0-9a-f]+ has expired"
                         r"|\[ZooKeeperClient [^\]]*\] Session expired\.")
_ZK_NEW = re.compile(r"Initializing a new session to|Session establishment complete")
_REGISTERED = re.compile(r"Registered broker (\d+) at path")
_KRAFT_CHANGE = re.compile(r"partition change for (\S+) with topic ID \S+: .*?leader: (-?\d+) -> "
                           r"(-?\d+), leaderEpoch: (\d+) -> (\d+)")
_ACTIVE = re.compile(r"\[QuorumController id=(\d+)\] Becoming the active controller at epoch (\d+)")
_FENCED = re.compile(r"Fencing broker (\d+)(?: at epoch \d+)? because (.+?)\.? \(")
_UNFENCED = re.compile(r"The request from broker (\d+) to unfence has been granted")
_HEARTBEAT = re.compile(r"\[BrokerLifecycleManager id=(\d+)\] Unable to send a heartbeat")
# Every line that can matter says one of these. Plain substring tests are fast; the patterns
# above are not (`\S+-\d+` tried at each position of a long line): they run only on a line
# that says what they look for, and the date is parsed only for those.
_WORTH_A_LOOK = ("ISR from", "starts at", "Truncating", "successfully elected",
                 "Changed partition", "Registered broker", "ZooKeeper", "Session e", "new session",
                 "active controller", "Fencing broker", "to unfence", "send a heartbeat",
                 "partition change for")
REPEATING = {"log_zk_expired", "log_zk_session", "log_heartbeat_failed"}  # one per 5 s


def parse_ts(stamp: str, millis: str) -> int:
    """UTC 'YYYY-mm-dd HH:MM:SS' + millis -> epoch ms (the lab's JVMs log in UTC)."""
    return _seconds(stamp) * 1000 + int(millis)


@functools.lru_cache(maxsize=4096)
def _seconds(stamp: str) -> int:
    """Lines come many to a second: strptime once per second seen."""
    return int(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp())



def _ids(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip().isdigit()]


def parse_line(line: str, node: str = "") -> dict[str, Any] | None:
    """One event for a line that matters, else None."""
    if not any(word in line for word in _WORTH_A_LOOK):
        return None
    match = _LINE.match(line.rstrip("\n"))
    if match is None:
        return None
    ts, level, text = parse_ts(match[1], match[2]), match[3], match[4]
    prefix = _BROKER_PREFIX.search(text)
    broker = int(prefix[1]) if prefix else broker_id_of(node)
    base: dict[str, Any] = {"ts": ts, "source": "broker-log", "node": node or None, "level": level}
    if "ISR from" in text and (found := _ISR.search(text)):
        part = _PARTITION_PREFIX.search(text)
        old, new = _ids(found[2]), _ids(found[3])
        kind = "log_isr_shrink" if found[1] == "Shrinking" else "log_isr_expand"
        return {**base, "kind": kind, "partition": part[1] if part else None, "broker": broker,
                "severity": "warn" if kind == "log_isr_shrink" else "info", "old_isr": old,
                "new_isr": new, "detail": f"broker {broker}: {found[1].lower()} ISR "
                f"{found[2]} → {found[3] or '(empty)'}"}
    if "starts at" in text and (found := _STARTS.search(text)):
        epoch, offset = int(found[3]), int(found[4])
        if found[1] == "Follower":
            current = _CURRENT_LEADER.search(text)
            return {**base, "kind": "log_follower_start", "partition": found[2], "broker": broker,
                    "severity": "info", "epoch": epoch, "offset": offset,
                    "leader": int(current[1]) if current else None,
                    "detail": f"broker {broker} follows at leader epoch {epoch} from offset {offset:,}"}
        return {**base, "kind": "log_leader_start", "partition": found[2], "broker": broker,
                "severity": "warn", "epoch": epoch, "offset": offset,
                "detail": f"broker {broker} leads from epoch {epoch} at offset {offset:,}"}
    if "Truncating" in text and (found := _TRUNC_FETCHER.search(text) or _TRUNC_LOG.search(text)):
        return _truncation(base, found[1], int(found[2]), broker)
    if "successfully elected" in text and (found := _ELECTED.search(text)):
        elected = int(found[1])
        return {**base, "kind": "log_controller_elected", "partition": None, "broker": elected,
                "severity": "warn", "epoch": int(found[2]),
                "detail": f"broker {elected} elected controller (epoch {found[2]})"}
    if "Changed partition" in text and (found := _CHANGED.search(text)):
        leader, epoch = int(found[4]), int(found[5])
        return {**base, "kind": "log_leader_and_isr", "partition": found[1],
                "broker": leader if leader >= 0 else None, "severity": "info", "epoch": epoch,
                "leader": leader, "detail": f"controller set leader {leader} at epoch {epoch} "
                f"({found[2]} → {found[3]})"}
    if "Registered broker" in text and (found := _REGISTERED.search(text)):
        return {**base, "kind": "log_broker_registered", "partition": None, "broker": int(found[1]),
                "severity": "info", "detail": f"broker {found[1]} registered in ZooKeeper"}
    if "partition change for" in text and (found := _KRAFT_CHANGE.search(text)):
        before, leader, epoch = int(found[2]), int(found[3]), int(found[5])
        return {**base, "kind": "log_leader_and_isr", "partition": found[1],
                "broker": leader if leader >= 0 else None, "severity": "info", "epoch": epoch,
                "leader": leader, "detail": f"controller set leader {leader} at epoch {epoch} "
                f"(was {before})"}
    if "active controller" in text and (found := _ACTIVE.search(text)):
        node_id, epoch = int(found[1]), int(found[2])
        return {**base, "kind": "log_controller_elected", "partition": None, "broker": node_id,
                "severity": "warn", "epoch": epoch,
                "detail": f"node {node_id} became the active controller (quorum epoch {epoch})"}
    if "Fencing broker" in text and (found := _FENCED.search(text)):
        return {**base, "kind": "log_broker_fenced", "partition": None, "broker": int(found[1]),
                "severity": "error", "detail": f"controller fenced broker {found[1]} "
                f"({found[2].removeprefix('its ')})"}
    if "to unfence" in text and (found := _UNFENCED.search(text)):
        return {**base, "kind": "log_broker_unfenced", "partition": None, "broker": int(found[1]),
                "severity": "info", "detail": f"controller unfenced broker {found[1]}"}
    if "send a heartbeat" in text and (found := _HEARTBEAT.search(text)):
        return {**base, "kind": "log_heartbeat_failed", "partition": None,
                "broker": int(found[1]), "severity": "warn",
                "detail": f"broker {found[1]}: cannot reach the controller quorum (heartbeat)"}
    if _ZK_EXPIRED.search(text):
        return {**base, "kind": "log_zk_expired", "partition": None, "broker": broker,
                "severity": "error", "detail": f"broker {broker}: ZooKeeper session expired"}
    if _ZK_NEW.search(text):
        return {**base, "kind": "log_zk_session", "partition": None, "broker": broker,
                "severity": "info", "detail": f"broker {broker}: new ZooKeeper session"}
    return None


def _truncation(base: dict[str, Any], partition: str | None, offset: int,
                broker: int | None) -> dict[str, Any]:
    return {**base, "kind": "log_truncate", "partition": partition, "broker": broker,
            "severity": "error", "offset": offset,
            "detail": f"broker {broker} truncated {partition or 'its log'} to offset {offset:,}"}


def parse_lines(lines: Iterable[str], node: str, topic: str | None = None) -> list[dict[str, Any]]:
    """Events from one node's lines, only those of `topic` (plus cluster-wide ones).

    Repeated ZooKeeper or heartbeat lines (a reconnect loop logs one a second or two) collapse
    to one per 5 s.
    """
    out: list[dict[str, Any]] = []
    last_zk: dict[str, int] = {}
    pattern = re.compile(rf"^{re.escape(topic)}-\d+$") if topic else None
    for line in lines:
        event = parse_line(line, node)
        if event is None:
            continue
        partition = event["partition"]
        if partition is not None and pattern is not None and not pattern.match(partition):
            continue
        if event["kind"] in REPEATING:
            if event["ts"] - last_zk.get(event["kind"], -10**15) < 5000:
                continue
            last_zk[event["kind"]] = event["ts"]
        out.append(event)
    return out


def read_broker_logs(logs: dict[str, list[Path]], topic: str | None) -> list[dict[str, Any]]:
    """All nodes' events in time order; unreadable bytes are replaced, never fatal."""
    events: list[dict[str, Any]] = []
    for node, files in logs.items():
        for path in files:
            with open(path, errors="replace") as handle:
                events.extend(parse_lines(handle, node, topic))
    events.sort(key=lambda e: (e["ts"], e["kind"]))
    return events
