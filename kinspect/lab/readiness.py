"""Waiting for a lab to be usable: ZooKeeper answering, every broker registered, a controller,
and then every broker answering with metadata that lists them all.

Registered is not usable: a broker is in ZooKeeper (or the quorum's metadata) before it accepts
connections, and the controller tells the others about it later still. A replication-factor-3
topic created in between fails ("larger than available brokers"), so `lab up` waits for what
a client will see."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from kinspect.clients.wire import ask_metadata
from kinspect.clients.zookeeper import read_controller, zk_session
from kinspect.errors import KinspectError
from kinspect.lab.state import LabState

MORE_TIME = "lab up --timeout SECONDS waits longer"


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for_port(
    host: str, port: int, deadline: float, alive: Callable[[], bool], what: str
) -> None:
    while time.monotonic() < deadline:
        if port_open(host, port):
            return
        if not alive():
            raise KinspectError(f"{what} exited while starting")
        time.sleep(0.2)
    raise KinspectError(f"{what} did not open {host}:{port} in time")


LAB_MARK = "/kinspect/lab-id"


def write_lab_mark(zookeeper: str, lab_id: str) -> None:
    """The lab's id in its own ZooKeeper: how kinspect later knows a cluster is its lab."""
    with zk_session(zookeeper, 20.0) as zk:
        if zk.exists(LAB_MARK):
            zk.set(LAB_MARK, lab_id.encode())
        else:
            zk.create(LAB_MARK, lab_id.encode(), makepath=True)


def read_lab_mark(zookeeper: str, timeout: float = 3.0) -> str | None:
    """The lab id a ZooKeeper holds; None when it holds none or cannot be reached."""
    try:
        with zk_session(zookeeper, timeout) as zk:
            data = zk.get(LAB_MARK)[0] if zk.exists(LAB_MARK) else None
    except Exception:  # unreachable, or an ACL or a chroot we may not read: not our lab
        return None
    return data.decode() if data else None


def clear_stale_registrations(zookeeper: str, progress: Callable[[str], None]) -> None:
    """Before a fresh start, drop broker and controller znodes left by SIGKILLed sessions.

    ZooKeeper restores those sessions from disk and keeps their ephemeral nodes until they
    time out; a broker starting meanwhile finds its id taken and exits.
    """
    with zk_session(zookeeper, 20.0) as zk:
        stale = zk.get_children("/brokers/ids") if zk.exists("/brokers/ids") else []
        for broker in stale:
            zk.delete(f"/brokers/ids/{broker}")
        if zk.exists("/controller"):
            zk.delete("/controller")
    if stale:
        progress(f"  cleared stale registrations of brokers {', '.join(sorted(stale))}")


def wait_registration_gone(zookeeper: str, broker_id: int, timeout: float,
                           progress: Callable[[str], None]) -> None:
    """Wait for a killed broker's old session to expire, as the real cluster would."""
    with zk_session(zookeeper, 10.0) as zk:
        path = f"/brokers/ids/{broker_id}"
        if zk.exists(path):
            progress(f"waiting for broker {broker_id}'s old ZooKeeper session to expire")
        deadline = time.monotonic() + timeout
        while zk.exists(path) and time.monotonic() < deadline:
            time.sleep(0.2)


def wait_for_cluster(
    zookeeper: str,
    broker_ids: list[int],
    deadline: float,
    alive: Callable[[], list[str]],
    progress: Callable[[str], None],
) -> int:
    """Block until every broker id is registered and a controller exists; return its id."""
    with zk_session(zookeeper, deadline - time.monotonic()) as zk:
        seen: set[int] = set()
        while time.monotonic() < deadline:
            dead = alive()
            if dead:
                raise KinspectError(f"{', '.join(dead)} exited while starting")
            registered = set()
            if zk.exists("/brokers/ids"):
                registered = {int(i) for i in zk.get_children("/brokers/ids")}
            for broker in sorted(registered - seen):
                progress(f"  broker {broker} registered")
            seen |= registered
            controller = read_controller(zk) if set(broker_ids) <= registered else None
            if controller is not None:
                return controller
            time.sleep(0.2)
    missing = sorted(set(broker_ids) - seen)
    raise KinspectError(f"brokers {missing} did not register in time ({MORE_TIME})")


def wait_for_kraft(state: LabState, deadline: float, dead: Callable[[], list[str]],
                   progress: Callable[[str], None]) -> int:
    """Block until every broker is in the cluster's metadata (KRaft lists unfenced brokers
    only) and the controller quorum names a leader; return the leader's node id."""
    from confluent_kafka import KafkaException

    from kinspect.clients.kafka import quiet_admin
    from kinspect.clients.quorum import describe_quorum

    wanted = {b.broker_id for b in state.brokers}
    admin = quiet_admin(state.bootstrap, **{"socket.timeout.ms": 3000})
    seen: set[int] = set()
    refused: str | None = "no Metadata request finished"  # None once one was answered
    while time.monotonic() < deadline:
        gone = dead()
        if gone:
            raise KinspectError(f"{', '.join(gone)} exited while starting")
        try:
            listed = set(admin.list_topics(timeout=2).brokers)
            refused = None
        except KafkaException as exc:
            listed = set()
            if refused is not None and exc.args:
                refused = str(exc.args[0])
        for broker in sorted(listed - seen):
            progress(f"  broker {broker} registered and unfenced")
        seen |= listed
        if wanted <= listed:
            answer = describe_quorum(list(state.controller_addresses.values()), timeout_s=2.0)
            if answer is not None and answer.leader_id is not None:
                return answer.leader_id
        time.sleep(0.3)
    missing = sorted(b for b in wanted - seen if b is not None)
    if refused is not None:  # not that the brokers are out: nobody said who is in
        raise KinspectError(f"no broker answered a Metadata request in time ({refused}; "
                            f"{MORE_TIME})")
    raise KinspectError(f"brokers {missing} did not join the KRaft cluster in time ({MORE_TIME})"
                        if missing else f"the controller quorum elected no leader in time "
                        f"({MORE_TIME})")


def served_gaps(brokers: dict[int, str]) -> dict[int, str]:
    """What keeps these brokers from being usable: broker id -> why (empty when none).

    Each is asked on a connection of its own (PLAINTEXT, which every lab broker keeps) and
    must list every one of `brokers` in the metadata it serves."""
    gaps: dict[int, str] = {}
    for broker_id, address in sorted(brokers.items()):
        try:
            listed = set(ask_metadata(address, timeout=2.0, broker_id=broker_id).brokers)
        except Exception as exc:  # refused, reset, timed out: not answering yet
            gaps[broker_id] = f"does not answer ({type(exc).__name__})"
            continue
        missing = sorted(set(brokers) - listed)
        if missing:
            gaps[broker_id] = f"does not list broker{'s' if len(missing) > 1 else ''} " + \
                ", ".join(map(str, missing))
    return gaps


def wait_until_served(brokers: dict[int, str], deadline: float,
                      progress: Callable[[str], None],
                      gone: Callable[[], bool] = lambda: False) -> dict[int, str]:
    """Until every broker answers and lists them all, the deadline, or `gone` says the node
    waited for exited; the gaps left."""
    gaps = served_gaps(brokers)
    said = False
    while gaps and time.monotonic() < deadline and not gone():
        if not said:
            progress("  waiting for every broker to answer and list the others")
            said = True
        time.sleep(0.2)
        gaps = served_gaps(brokers)
    return gaps


def describe_gaps(gaps: dict[int, str]) -> str:
    return "; ".join(f"broker {broker} {why}" for broker, why in sorted(gaps.items()))
