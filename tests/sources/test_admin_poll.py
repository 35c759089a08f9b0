"""The full poll's assembly (sources/admin.py) without a cluster: each probe stood in for, the
poll hands it what the metadata said, asks the later ones with what the earlier found, and puts
every answer where the BrokerView keeps it."""

from __future__ import annotations

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
