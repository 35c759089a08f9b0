"""The full poll's assembly (sources/admin.py) without a cluster: each probe stood in for, the
poll hands it what the metadata said, asks the later ones with what the earlier found, and puts
every answer where the BrokerView keeps it."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from kinspect.clients.quorum import QuorumPoll
from kinspect.clients.wire import BrokerClaim
from kinspect.model import EpochEnd, Offsets, PartitionMeta, Reassignment, ReplicaEnd, Unknown
from kinspect.sources.probes.base import Poll
from kinspect.sources.probes.brokers_probe import BrokerAnswers
from kinspect.sources.probes.configs_probe import TopicConfigs
from kinspect.sources.probes.disks_probe import Disks
from tests.helpers.kraft_fixtures import admin

KEY = ("t", 0)


def _metadata() -> Any:
    broker = SimpleNamespace(id=1, host="198.18.1.11", port=9092)
    part = SimpleNamespace(leader=-1, replicas=[1], isrs=[])
    return SimpleNamespace(brokers={1: broker}, controller_id=-1,
                           topics={"t": SimpleNamespace(partitions={0: part})})


def test_a_poll_assembles_its_probes_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    source = admin()
    source._admin = SimpleNamespace(list_topics=lambda timeout: _metadata())  # type: ignore[assignment]
    probes = source._probes
    seen: dict[str, Poll] = {}

    def stand_in(name: str, answer: object) -> None:
        def ask(poll: Poll) -> object:
            seen[name] = poll
            return answer
        monkeypatch.setattr(getattr(probes, name), "ask", ask)

    claim = BrokerClaim(1, (1,), (1,), 4, offline=(2,))
    ends = {KEY: {1: ReplicaEnd(10, 3)}}
    moving = {KEY: Reassignment((1, 2), (2,), ())}
    stand_in("topic_configs", TopicConfigs({"t": {}}, {"u": Unknown("configs refused")}))
    stand_in("broker_configs", {1: Unknown("refused")})
    stand_in("offsets", {KEY: Offsets(10, 0, 4)})
    stand_in("brokers", BrokerAnswers({1: {KEY: claim}}, ends, {2: "no answer"}))
    stand_in("quorum", QuorumPoll(mode="kraft", answer=None, error="nobody leads"))
    stand_in("reassignments", moving)
    stand_in("log_dirs", Disks({1: Unknown("dirs refused")}, 5))
    stand_in("epoch_ends", {KEY: {1: EpochEnd(3, 9)}})
    stand_in("eligible", {KEY: Unknown("elr refused")})
    view, claims = source._poll()
    assert seen["offsets"].partitions == {KEY: PartitionMeta(None, (1,), ())}  # -1: none
    assert seen["offsets"].controller is None and seen["offsets"].refresh
    assert seen["epoch_ends"].ends == ends and seen["epoch_ends"].mode == "kraft"
    assert seen["eligible"].decisions[KEY].leader_epoch == 4
    assert claims == {1: {KEY: claim}} and source.mode == "kraft"
    assert view.state == "ok" and view.offsets == {KEY: Offsets(10, 0, 4)}
    assert view.decided[KEY].leader == 1 and view.epoch_ends == {KEY: {1: EpochEnd(3, 9)}}
    assert view.quorum_error == "nobody leads" and view.controllers == ()
    assert view.broker_configs == {1: Unknown("refused")} and view.configs == {"t": {}}
    assert view.config_unknown == {"u": Unknown("configs refused")}
    assert view.replica_ends == ends and view.offline_replicas == {KEY: (2,)}
    assert view.probe_errors == {2: "no answer"} and view.elr == {KEY: Unknown("elr refused")}
    assert view.reassignments == moving and view.stalled_since == {}  # broker 2 told no end
    assert view.log_dirs == {1: Unknown("dirs refused")} and view.log_dirs_at_ms == 5
    assert isinstance(view.hidden_topics, Unknown)  # no disks answered yet
    source._close()


def test_a_probe_not_asked_or_refused_is_unknown_with_its_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without per-broker connections (e.g. GSSAPI) the reassignments, the eligible leaders and
    the hidden topics are Unknown with why, the quorum and the brokers' own word are not asked,
    and no probe makes up an answer; a refused DescribeQuorum is Unknown, not 'no leader'."""
    from kinspect.errors import KinspectError
    from kinspect.sources import admin as admin_module
    from kinspect.sources.admin import AdminSource
    from kinspect.sources.probes.cluster_probe import quorum_refused

    def refuse(config: object) -> dict[str, object]:
        raise KinspectError("GSSAPI: no per-broker connections")

    monkeypatch.setattr(admin_module, "connection_settings", refuse)
    source = AdminSource("127.0.0.1:1", lambda: None, watch_groups=False)
    source._admin = SimpleNamespace(list_topics=lambda timeout: _metadata())  # type: ignore[assignment]
    probes = source._probes
    monkeypatch.setattr(probes.topic_configs, "ask", lambda poll: TopicConfigs())
    monkeypatch.setattr(probes.broker_configs, "ask", lambda poll: {})
    monkeypatch.setattr(probes.offsets, "ask", lambda poll: {})
    view, claims = source._poll()
    assert view.state == "ok" and view.probes_off == "GSSAPI: no per-broker connections"
    assert view.reassignments == Unknown("brokers not asked directly "
                                         "(GSSAPI: no per-broker connections)")
    assert view.elr == Unknown("not a KRaft cluster") and view.mode == "unknown"
    assert isinstance(view.hidden_topics, Unknown) and view.log_dirs == {}
    assert view.quorum is None and view.quorum_error is None and view.quorum_unknown is None
    assert claims == {} and view.replica_ends == {} and view.probe_errors == {}
    refused = QuorumPoll(mode="kraft", answer=None,
                         error="ClusterAuthorizationFailed: DescribeQuorum")
    assert quorum_refused(refused) == Unknown(
        "no Describe permission on the cluster: DescribeQuorum refused")
    assert quorum_refused(replace(refused, error="timed out")) is None  # not a refusal
    source._close()


def test_probes_on_two_threads_share_one_link_to_a_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The full polls' links are asked for by probes on several threads at once (the brokers'
    own answers, the reassignments): each broker gets one link, none made and then lost."""
    import threading
    import time

    from kinspect.sources.probes import base

    made: list[object] = []

    class SlowLink:
        def __init__(self, address: str, settings: object, broker: int) -> None:
            time.sleep(0.05)  # a second thread comes in meanwhile
            self.address, self.broker_id = address, broker
            made.append(self)

        def close(self) -> None:
            pass

    monkeypatch.setattr(base, "BrokerLink", SlowLink)
    links = base.Links({})
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(links.to(1, "198.18.1.11:9092")))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and got == [made[0], made[0]]
