"""Node names, and blockade's partition semantics as a pure function.

Groups are sets of node names; two endpoints can talk if and only if some group holds both.
Nodes named in no group form one more group together. Clients (the root namespace) reach
everyone unless `clients_with` names a node, in which case they join every group holding it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

from kinspect.errors import KinspectError

CLIENTS = "clients"
ZOOKEEPER_NODE = "zk1"
BROKER_PREFIX = "kafka"
CONTROLLER_PREFIX = "ctl"
CONTROLLER_ID_BASE = 100  # ctlN is KRaft node 100 + N: apart from the brokers' ids 1..9


def broker_node(broker_id: int) -> str:
    """The lab's name for broker N: kafkaN (the one place that naming lives)."""
    return f"{BROKER_PREFIX}{broker_id}"


def broker_id_of(node: str | None) -> int | None:
    """kafkaN → N; None for ZooKeeper, clients or anything else."""
    digits = (node or "")[len(BROKER_PREFIX):]
    return int(digits) if (node or "").startswith(BROKER_PREFIX) and digits.isdigit() else None


def node_names(brokers: int, controllers: int | None = None) -> list[str]:
    """zk1, kafka1..kafkaN: a ZooKeeper lab of N brokers (controllers None); ctl1..ctlM,
    kafka1..kafkaN: a KRaft lab (M = 0: the brokers are the quorum themselves)."""
    first = ([ZOOKEEPER_NODE] if controllers is None
             else [f"{CONTROLLER_PREFIX}{i}" for i in range(1, controllers + 1)])
    return [*first, *(broker_node(i) for i in range(1, brokers + 1))]


def controller_id_of(node: str) -> int | None:
    """ctlN → its KRaft node id (100 + N); None for anything else."""
    digits = node[len(CONTROLLER_PREFIX):]
    if node.startswith(CONTROLLER_PREFIX) and digits.isdigit():
        return CONTROLLER_ID_BASE + int(digits)
    return None


def node_of(node_id: int) -> str:
    """The lab node a controller or broker id names: kafkaN, or ctlN for KRaft's 100 + N."""
    if node_id > CONTROLLER_ID_BASE:
        return f"{CONTROLLER_PREFIX}{node_id - CONTROLLER_ID_BASE}"
    return broker_node(node_id)


def parse_groups(specs: Sequence[str], nodes: Iterable[str]) -> list[list[str]]:
    """Turn `kafka1,kafka2 zk1` into validated groups; unnamed nodes form a last group."""
    known = list(nodes)
    if not specs:
        raise KinspectError("partition needs at least one group, e.g. 'kafka2' or 'kafka1,zk1'")
    groups: list[list[str]] = []
    for spec in specs:
        members = _group(spec, known)
        if members in groups:
            raise KinspectError(f"group {spec!r} is given twice")
        groups.append(members)
    named = {m for g in groups for m in g}
    rest = [n for n in known if n not in named]
    if rest:
        groups.append(rest)
    if len(groups) == 1:
        raise KinspectError("those groups hold every node together: nothing would be cut "
                            "(use heal)")
    return groups


def _group(spec: str, known: list[str]) -> list[str]:
    """One group's nodes (`kafka1,zk1`): each named once, each a node of the lab."""
    members = [m.strip() for m in spec.split(",")]
    if any(not m for m in members):
        raise KinspectError(f"empty node name in group {spec!r}")
    for member in members:
        if member not in known:
            raise KinspectError(f"unknown node {member!r} (nodes: {', '.join(known)})")
    if len(set(members)) != len(members):
        raise KinspectError(f"group {spec!r} names a node twice")
    return members


def blocked_pairs(
    nodes: Iterable[str], groups: Sequence[Sequence[str]], clients_with: str | None = None
) -> set[frozenset[str]]:
    """Every pair of endpoints (nodes, plus CLIENTS) that must not reach each other."""
    known = list(nodes)
    if not groups:
        return set()
    full = [set(g) for g in groups]
    if clients_with is not None:
        if clients_with not in known:
            raise KinspectError(f"unknown node {clients_with!r} for --clients")
        for group in full:
            if clients_with in group:
                group.add(CLIENTS)
    endpoints = [*known, CLIENTS] if clients_with is not None else known
    blocked: set[frozenset[str]] = set()
    for a, b in combinations(endpoints, 2):
        if not any(a in g and b in g for g in full):
            blocked.add(frozenset((a, b)))
    return blocked


def isolate_groups(node: str, nodes: Iterable[str], scope: str) -> list[list[str]]:
    """`isolate NODE --from zk|brokers|all` expressed as partition groups. In a KRaft lab
    `zk` (or its alias `controllers`) means the dedicated controller quorum: the node that
    stands where ZooKeeper stood."""
    known = list(nodes)
    if node not in known:
        raise KinspectError(f"unknown node {node!r} (nodes: {', '.join(known)})")
    others = [n for n in known if n != node]
    zookeepers = [n for n in others if broker_id_of(n) is None]
    brokers = [n for n in others if broker_id_of(n) is not None]
    if scope == "all":
        return [[node], others]
    if scope in ("zk", "controllers"):
        if not zookeepers:
            raise KinspectError(f"{node} is {_why_no_quorum(node)}; use --from brokers or all")
        return [[node, *brokers], others]
    if scope == "brokers":
        if not brokers:
            return [[node], others]
        return [[node, *zookeepers], others]
    raise KinspectError(f"--from must be zk, brokers or all, not {scope!r}")


def _why_no_quorum(node: str) -> str:
    """Why `node` has no ZooKeeper or controller quorum apart from it to be cut from."""
    if node == ZOOKEEPER_NODE:
        return "ZooKeeper itself"
    if broker_id_of(node) is not None:
        return "in a lab whose brokers are the controller quorum (combined mode)"
    return "the only controller"
