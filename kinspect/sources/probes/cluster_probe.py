"""What the cluster as a whole says: the reassignments under way, KRaft's eligible leader
replicas, and who leads the KRaft quorum (clients/quorum.py: the brokers' ApiVersions also
tell the mode)."""

from __future__ import annotations

from kinspect.clients.quorum import QuorumPoll, QuorumProbe
from kinspect.clients.reassignments import ask_controller_reassignments
from kinspect.clients.topic_partitions import ask_eligible_leaders
from kinspect.model import EligibleLeaders, Fact, Reassignment, Unknown
from kinspect.sources.probes.base import Asking, EveryPoll, Key, Links, Poll

Reassignments = Fact[dict[Key, Reassignment]]
Eligible = Fact[dict[Key, Fact[EligibleLeaders]]]
QUORUM_UNASKED = QuorumPoll(mode=None, answer=None, error=None)


class ReassignmentsProbe(EveryPoll):
    """ZooKeeper's topic znodes say it when watched; else ListPartitionReassignments, of the
    controller in ZooKeeper mode (any broker forwards it in KRaft)."""

    def __init__(self, asking: Asking, links: Links) -> None:
        self._asking = asking
        self._links = links

    def ask(self, poll: Poll) -> Reassignments:
        if poll.zookeeper_watched:
            return {}  # the observer reads them from ZooKeeper (model/build.py prefers it)
        if self._asking.settings is None:
            return self._asking.not_asked()
        return ask_controller_reassignments(self._links.all_of(poll.brokers), poll.controller,
                                            min(2.0, self._asking.timeout_s))


class EligibleLeadersProbe:
    """KRaft's eligible leader replicas (Kafka 4.x), from the first broker that answers."""

    def __init__(self, asking: Asking, links: Links) -> None:
        self._asking = asking
        self._links = links

    def asks(self, poll: Poll) -> bool:
        return poll.mode == "kraft"

    def unasked(self, poll: Poll) -> Eligible:
        return Unknown("not a KRaft cluster")

    def ask(self, poll: Poll) -> Eligible:
        if self._asking.settings is None:
            return self._asking.not_asked()
        answer: Eligible = Unknown("no broker answered")
        for link in self._links.all_of(poll.brokers):
            answer = ask_eligible_leaders(link, None, self._asking.budget(2.0))
            if not isinstance(answer, Unknown):
                return answer
            if "did not answer" not in answer.reason:
                return answer
        return answer


class KraftQuorumProbe:
    """The KRaft quorum, via the brokers and each known controller directly (unless the
    observer watches ZooKeeper). Until a first answer, the poll's whole timeout: a one-shot
    `health` has no earlier answer to fall back on, and a fresh connection to a loaded broker
    can take more than a second."""

    def __init__(self, asking: Asking) -> None:
        self._asking = asking
        self.quorum = QuorumProbe(asking.settings)

    def asks(self, poll: Poll) -> bool:
        return self._asking.settings is not None and poll.mode != "zookeeper"

    def unasked(self, poll: Poll) -> QuorumPoll:
        return QUORUM_UNASKED

    def ask(self, poll: Poll) -> QuorumPoll:
        budget = self._asking.timeout_s
        if self.quorum.answered:
            budget = min(1.0, budget)
        return self.quorum.poll(poll.targets(), poll.controllers, budget)

    def close(self) -> None:
        self.quorum.close()


def quorum_refused(asked: QuorumPoll) -> Unknown | None:
    """DescribeQuorum refused (Describe on the cluster): who leads is unknown, not absent."""
    if asked.answer is not None or not asked.error:
        return None
    if "ClusterAuthorizationFailed" in asked.error:
        return Unknown("no Describe permission on the cluster: DescribeQuorum refused")
    return None
