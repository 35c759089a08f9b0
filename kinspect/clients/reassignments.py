"""Partitions being moved, as the controller knows them: ListPartitionReassignments (API key 46).

Only the controller tracks reassignments. In ZooKeeper mode only the active controller answers
(any other broker says NOT_CONTROLLER), so ask the broker Metadata names as the controller, and
ask again after a controller change; `ask_controller_reassignments` tries the named one first,
then every other. In KRaft any broker forwards the request to the active controller. kafka-python
ships the request (v0, the only version); the answers become model values, and every failure an
Unknown whose reason says what to do about it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafka.errors import ClusterAuthorizationFailedError, NotControllerError, for_code
from kafka.protocol.admin import ListPartitionReassignmentsRequest

from kinspect.clients.quorum import NO_ANSWER
from kinspect.clients.wire import BrokerLink
from kinspect.model.facts import Unknown
from kinspect.model.views import Reassignment

__all__ = ["LIST_REASSIGNMENTS", "NOT_CONTROLLER", "ask_controller_reassignments",
           "ask_reassignments", "broker_name", "error_name", "reassignments_from"]

LIST_REASSIGNMENTS = 46
CLUSTER_AUTHORIZATION_FAILED = ClusterAuthorizationFailedError.errno
NOT_CONTROLLER = NotControllerError.errno
NOT_THE_CONTROLLER = "is not the controller"  # in the reason of a NOT_CONTROLLER answer

Reassignments = dict[tuple[str, int], Reassignment]


def broker_name(link: BrokerLink) -> str:
    """How a reason names the broker asked: its id when known, else its address."""
    return f"broker {link.broker_id}" if link.broker_id is not None else link.address


def error_name(code: int) -> str:
    return f"{for_code(code).__name__} ({code})"


def reassignments_from(response: Any, asked: str) -> Reassignments | Unknown:
    """A ListPartitionReassignmentsResponse as each moving partition's Reassignment."""
    code = response.error_code
    if code == CLUSTER_AUTHORIZATION_FAILED:
        return Unknown("no Describe permission on the cluster: reassignments unknown")
    if code == NOT_CONTROLLER:
        return Unknown(f"{asked} {NOT_THE_CONTROLLER}: in ZooKeeper mode only the controller "
                       "answers ListPartitionReassignments")
    if code:
        detail = f": {response.error_message}" if response.error_message else ""
        return Unknown(f"{asked} answered ListPartitionReassignments with "
                       f"{error_name(code)}{detail}")
    out: Reassignments = {}
    for topic, partitions, _tags in response.topics or ():
        for index, replicas, adding, removing, _ptags in partitions or ():
            out[(topic, index)] = Reassignment(tuple(replicas or ()), tuple(adding or ()),
                                               tuple(removing or ()))
    return out


def ask_reassignments(link: BrokerLink, timeout_s: float) -> Reassignments | Unknown:
    """Every partition being moved ({} when none), asked of this broker: the controller in
    ZooKeeper mode (any other says it is not the controller), any broker in KRaft. Never
    raises: no answer, an older Kafka and a refusal are each an Unknown with its reason."""
    asked = broker_name(link)
    try:
        if LIST_REASSIGNMENTS not in link.api_versions(timeout_s):
            return Unknown("Kafka before 2.4 has no ListPartitionReassignments")
        request = ListPartitionReassignmentsRequest[0](timeout_ms=int(timeout_s * 1000),
                                                       topics=None, tags={})
        response = link.ask(request, timeout_s)
    except NO_ANSWER as exc:
        return Unknown(f"{asked} did not answer ListPartitionReassignments: "
                       f"{str(exc) or type(exc).__name__}")
    return reassignments_from(response, asked)


def ask_controller_reassignments(links: Iterable[BrokerLink], controller_id: int | None,
                                 timeout_s: float) -> Reassignments | Unknown:
    """The first answer of the controller (`controller_id`, as Metadata names it) or, when it is
    not (any more) the controller or does not answer, of each other broker in turn. The reason
    of the controller's Unknown when nobody answers; a refusal ends the search (it is the
    cluster's ACLs, and every broker would say the same)."""
    ordered = sorted(links, key=lambda link: link.broker_id != controller_id)
    first: Unknown | None = None
    for link in ordered:
        answer = ask_reassignments(link, timeout_s)
        if not isinstance(answer, Unknown):
            return answer
        if not _worth_another(answer):
            return answer
        first = answer if first is None else first
    return Unknown("no broker to ask ListPartitionReassignments") if first is None else first


def _worth_another(answer: Unknown) -> bool:
    return NOT_THE_CONTROLLER in answer.reason or "did not answer" in answer.reason
