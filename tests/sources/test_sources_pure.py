"""The parts of the sources that need no network: decoding a broker's answer, merging claims."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from kafka.protocol.metadata import MetadataResponse
from kafka.protocol.offset_for_leader_epoch import OffsetForLeaderEpochResponse

from kinspect.clients.wire import BrokerClaim, ask_epoch_ends, claims_from, connection_settings
from kinspect.errors import KinspectError
from kinspect.model import EpochEnd, PartitionStateZ, ReplicaEnd
from kinspect.sources.claims import merge_claims, self_claims
from kinspect.sources.probes.brokers_probe import older_epochs
from tests.helpers.model_fixtures import T0, broker_view, zk_view


def test_claims_from_a_metadata_answer() -> None:
    """What a broker's MetadataResponse v1 says, decoded by kafka-python, as claims."""
    response = MetadataResponse[1](  # kept: kafka-python binds encode() weakly to it
        brokers=[(1, "198.18.1.11", 9092, None), (2, "198.18.1.12", 9092, "r")], controller_id=2,
        topics=[(0, "test1", False, [(0, 0, 2, [2, 1], [2])])])
    wire = response.encode()
    answer = claims_from(MetadataResponse[1].decode(io.BytesIO(wire)))
    assert answer.controller_id == 2
    assert answer.brokers == {1: "198.18.1.11:9092", 2: "198.18.1.12:9092"}
    assert answer.partitions == {("test1", 0): BrokerClaim(2, (2, 1), (2,))}


def test_librdkafka_settings_map_to_the_probe() -> None:
    settings = connection_settings({"bootstrap.servers": "x:1", "security.protocol": "sasl_ssl",
                                    "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u",
                                    "sasl.password": "p", "ssl.ca.location": "/ca.pem",
                                    "ssl.endpoint.identification.algorithm": "none"})
    assert settings == {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
                        "sasl_plain_username": "u", "sasl_plain_password": "p",
                        "ssl_cafile": "/ca.pem", "ssl_check_hostname": False}
    with pytest.raises(KinspectError, match=r"^per-replica probes off: GSSAPI"):
        connection_settings({"sasl.mechanism": "GSSAPI"})
    oauth = connection_settings({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
                                 "sasl.oauthbearer.config": "principal=alice lifeSeconds=60",
                                 "sasl.oauthbearer.extensions": "tenant=a,zone=b"})
    provider = oauth.pop("sasl_oauth_token_provider")
    assert oauth == {"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER"}
    _header, claims, signature = provider.token().split(".")
    assert json.loads(base64.urlsafe_b64decode(claims + "==="))["sub"] == "alice"
    assert signature == "" and provider.extensions() == {"tenant": "a", "zone": "b"}
    with pytest.raises(KinspectError, match=r"needs sasl\.oauthbearer\.token\.endpoint\.url"):
        connection_settings({"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
                             "sasl.oauthbearer.client.id": "c"})


def test_rogue_self_claim_wins_the_broker_view() -> None:
    zk = zk_view(states={("test1", 0): PartitionStateZ(1, 3, (1, 2), 3, T0 - 5000)})
    view = broker_view(zk)
    claims = {1: {("test1", 0): BrokerClaim(1, (3, 1, 2), (1, 2))},
              3: {("test1", 0): BrokerClaim(3, (3, 1, 2), (3,))}}
    merged = merge_claims(view, claims, zk)
    assert merged.partitions[("test1", 0)].leader == 3
    agreeing = merge_claims(view, {1: claims[1]}, zk)
    assert agreeing.partitions[("test1", 0)].leader == 1
    assert merge_claims(view, {}, zk) is view


def test_a_claim_the_admin_client_saw_alike_keeps_its_partition() -> None:
    """Where the AdminClient's metadata already says what the self-claim says, its own value is
    kept (no copy per partition of a healthy cluster); where they differ, the claim is shown."""
    zk = zk_view(states={("test1", 0): PartitionStateZ(1, 3, (1, 2), 3, T0 - 5000)})
    view = broker_view(zk)
    told = view.partitions[("test1", 0)]
    alike = {told.leader: {("test1", 0): BrokerClaim(told.leader, told.replicas, told.isr)}}
    assert merge_claims(view, alike, zk).partitions[("test1", 0)] is told
    shrunk = {told.leader: {("test1", 0): BrokerClaim(told.leader, told.replicas,
                                                      told.isr[:1])}}
    shown = merge_claims(view, shrunk, zk).partitions[("test1", 0)]
    assert shown is not told and (shown.leader, shown.replicas, shown.isr) == (1, (3, 1, 2), (1,))


def test_brokers_sharing_one_answer_claim_as_if_each_had_its_own() -> None:
    """Brokers that answered the same bytes share one decoded dict: read once, the same claims."""
    answer = {("t", 0): BrokerClaim(1, (1, 2), (1, 2)), ("t", 1): BrokerClaim(2, (2, 1), (2,)),
              ("t", 2): BrokerClaim(None, (3,), ()), ("t", 3): BrokerClaim(3, (3, 1), (3,))}
    rogue = {**answer, ("t", 0): BrokerClaim(3, (1, 2), (3,))}  # broker 3's own, older word
    shared = {1: answer, 2: answer, 3: rogue}
    copies = {1: dict(answer), 2: dict(answer), 3: dict(rogue)}
    assert self_claims(shared) == self_claims(copies) == {
        ("t", 0): {1: answer[("t", 0)], 3: rogue[("t", 0)]}, ("t", 1): {2: answer[("t", 1)]},
        ("t", 3): {3: rogue[("t", 3)]}}


class FakeLeader:
    """Stands in for a leader answering OffsetsForLeaderEpoch from a fixed epoch history (no
    broker here): epoch 0 ends at 100, epoch 2 at 250, epoch 3 is the current one."""

    ends = {0: 100, 2: 250}

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def ask(self, request: Any, timeout_s: float = 1.0) -> Any:
        self.requests.append(request)
        topics = []
        for topic, parts in request.topics:
            answers = []
            for partition, _current, epoch in parts:
                found = max((e for e in self.ends if e <= epoch), default=-1)
                answers.append((0, partition, found, self.ends.get(found, -1)))
            topics.append((topic, answers))
        return OffsetForLeaderEpochResponse[3](throttle_time_ms=0, topics=topics)


def test_epoch_ends_ask_each_partition_once_per_request() -> None:
    leader = FakeLeader()
    out = ask_epoch_ends(leader, {("t", 0): [0, 1], ("t", 1): [2]})  # type: ignore[arg-type]
    assert out == {("t", 0): {0: EpochEnd(0, 100), 1: EpochEnd(0, 100)},
                   ("t", 1): {2: EpochEnd(2, 250)}}
    for request in leader.requests:  # a partition twice in one request is not answered twice
        keys = [(topic, p[0]) for topic, parts in request.topics for p in parts]
        assert len(keys) == len(set(keys))
    assert len(leader.requests) == 2


def test_a_subscriber_that_raises_is_said_and_the_others_still_get_snapshots() -> None:
    """The TUI assesses each snapshot in the observer's thread: a bug there must not end the
    builder (the screen would freeze on a stale picture without a word)."""
    from kinspect.sources.observer import Observer

    observer = Observer("127.0.0.1:1", None)  # nothing connects until start()
    seen: list[Any] = []

    def assess_badly(snapshot: Any, events: Any) -> None:
        raise ValueError("boom")

    observer.subscribe(assess_badly)
    observer.subscribe(lambda snapshot, events: seen.append(snapshot))
    observer._hand_out("first", [])
    assert seen == ["first"]
    assert observer.problems() == [
        "a snapshot was not shown or kept: "
        "test_a_subscriber_that_raises_is_said_and_the_others_still_get_snapshots.<locals>."
        "assess_badly: ValueError: boom"]
    observer._subscribers.remove(assess_badly)
    observer._hand_out("second", [])
    assert seen == ["first", "second"] and observer.problems() == []


class NewsEachTime:
    """Stands in for the ZooKeeper source (no ZooKeeper here): every view is a new one, as
    after a watch fired, so the observer builds each time."""

    def view(self) -> object:
        return object()

    def stop(self) -> None:
        pass


def test_the_observer_tells_a_controller_move_seen_in_steps_once(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """The observer keeps one ControllerMoves across its builds: the three snapshots of one
    ZooKeeper-mode move give its subscribers (the TUI's event log, `watch --jsonl`) and
    timeline.jsonl one controller_changed, with the fields --jsonl consumers read."""
    import json

    from kinspect.model import build_snapshot
    from kinspect.sources import observer as observing

    script = iter([(3, 1), (None, 1), (1, 1), (1, 2)])

    def scripted(_zk: Any, _broker: Any, expected: Any, taken_at: int) -> Any:
        controller, epoch = next(script)
        view = zk_view(controller=controller, epoch=epoch)
        return build_snapshot(view, broker_view(view), expected, taken_at)

    monkeypatch.setattr(observing, "build_snapshot", scripted)
    observer = observing.Observer("127.0.0.1:1", None, run_dir=tmp_path)  # never started
    observer.admin = None
    observer.zk = NewsEachTime()  # type: ignore[assignment]
    told = []
    for _ in range(4):
        _snapshot, events = observer.build()
        observer._record(events)
        told += [e for e in events if e.kind == "controller_changed"]
    observer.stop()
    assert [e.detail for e in told] == ["controller 3 → 1 (epoch 2)"]
    lines = [json.loads(line) for line in (tmp_path / "timeline.jsonl").read_text().splitlines()]
    assert [(e["kind"], e["old"], e["new"], e["epoch"]) for e in lines
            if e["kind"] == "controller_changed"] == [("controller_changed", 3, 1, 2)]


def test_probes_a_login_cannot_make_are_said_off_on_screen_and_in_json() -> None:
    from dataclasses import replace

    from kinspect.model.build import build_snapshot
    from kinspect.model.serialize import snapshot_to_json
    from kinspect.tui.render import warnings_text

    try:
        connection_settings({"sasl.mechanism": "GSSAPI"})
    except KinspectError as exc:
        off = str(exc)
    view = replace(broker_view(zk_view(states={})), probes_off=off)
    snapshot = build_snapshot(None, view, [1, 2, 3], T0)
    said = [x for x in snapshot_to_json(snapshot)["limitations"] if "probes off" in x]
    assert said and said[0].startswith("per-replica probes off: GSSAPI"), said
    assert "per-replica probes off: GSSAPI" in warnings_text(snapshot).plain


def test_the_fast_polls_broker_list_outvotes_a_zombie() -> None:
    """KRaft's broker list between full polls: what most answering brokers list (a fenced
    broker still running lists itself from its stale image); a tie keeps the current view."""
    from kinspect.sources.admin import listed_by_most

    a, b, c = "198.18.1.11:9092", "198.18.1.12:9092", "198.18.1.13:9092"
    current = {1: a, 2: b, 3: c}
    zombie = {3: {1: a, 2: b, 3: c}}  # broker 3, fenced, still sees itself
    fenced = listed_by_most({1: {1: a, 2: b}, 2: {1: a, 2: b}, **zombie}, current)
    assert fenced == {1: a, 2: b}
    assert listed_by_most({1: {1: a, 2: b, 3: c}, 2: {1: a, 2: b, 3: c}}, {1: a, 2: b}) == current
    assert listed_by_most({1: {1: a}, 2: {1: a, 2: b}}, current) == {1: a, 2: b}  # a tie
    assert listed_by_most({1: {1: a}, 2: {1: a, 2: b}}, {1: a}) == {1: a}


def test_a_poll_landing_late_never_takes_the_screen_back_in_time() -> None:
    """Fast polls run beside the full ones: a full poll asked before a fast poll landed keeps
    the fast poll's decisions, except where its own epoch is higher (epochs only grow)."""
    from kinspect.model.views import PartitionDecision
    from kinspect.sources.admin import keep_newer_epochs

    now = {("t", 0): PartitionDecision(2, 6, (2, 3), (1, 2, 3)),  # the fast poll: a new leader
           ("t", 1): PartitionDecision(1, 4, (1, 2, 3), (1, 2, 3))}
    late = {("t", 0): PartitionDecision(1, 5, (1, 2, 3), (1, 2, 3)),  # asked before it
            ("t", 1): PartitionDecision(3, 5, (3, 1), (1, 2, 3)),  # ...yet it saw one more
            ("t", 2): PartitionDecision(1, 0, (1,), (1,))}
    merged = keep_newer_epochs(now, late)
    assert merged == {("t", 0): now[("t", 0)], ("t", 1): late[("t", 1)]}


def test_the_fast_poll_leaves_an_unreachable_broker_to_the_full_poll() -> None:
    from kinspect.sources.admin import fast_targets

    brokers = {1: "198.18.1.11:9092", 2: "198.18.1.12:9092", 3: "198.18.1.13:9092"}
    assert fast_targets(brokers, {2: "198.18.1.12:9092: no answer in 1.0 s"}) == {
        1: "198.18.1.11:9092", 3: "198.18.1.13:9092"}
    assert fast_targets(brokers, {}) == brokers


def test_the_fast_polls_ask_the_brokers_in_turn() -> None:
    """One broker per fast poll, each in turn: a change every broker has heard of is seen by
    the next poll, a third of the interval away on three brokers."""
    from kinspect.sources.admin import next_in_turn

    asked, last = [], None
    for _ in range(5):
        last = next_in_turn({3: "c", 1: "a", 2: "b"}, last)
        asked.append(last)
    assert asked == [1, 2, 3, 1, 2]
    assert next_in_turn([1, 3], 2) == 3  # broker 2 left the list: the turn goes on from it
    assert next_in_turn([1, 2], 3) == 1


def test_a_fast_poll_asks_one_broker_and_keeps_the_others_last_answers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """KRaft between full polls: each fast poll asks the next broker; a newer epoch it tells
    is on screen at once, and the other brokers' last answers still count (the newest epoch
    wins); the very bytes it answered last time are not decided again."""
    from dataclasses import replace

    from kinspect.clients.wire import MetadataAnswer
    from kinspect.model import BrokerView
    from kinspect.model.views import PartitionDecision
    from tests.helpers.kraft_fixtures import BROKERS, CLAIMS, KEY, admin

    source = admin()
    source.mode, source.probe_brokers = "kraft", True
    source._link_settings = {}
    source._claims = dict(CLAIMS)  # a full poll's: broker 2 and 3 say leader 2 at epoch 5
    source._view = BrokerView("ok", None, dict(BROKERS), 3, {}, {}, {}, mode="kraft",
                              decided=source._decisions(CLAIMS, 0))
    moved = {KEY: BrokerClaim(3, (1, 2, 3), (3, 1), 6)}  # broker 1 has heard of epoch 6
    answers = {1: moved, 2: CLAIMS[2], 3: CLAIMS[3]}
    asked: list[int] = []

    def ask(targets: dict[int, str]) -> dict[int, MetadataAnswer]:
        (broker,) = targets
        asked.append(broker)
        return {broker: MetadataAnswer(broker, 3, dict(BROKERS), answers[broker])}

    monkeypatch.setattr(source, "_ask_brokers", ask)
    changes: list[int] = []
    source._on_change = lambda: changes.append(1)
    source._fast_poll()
    assert asked == [1] and source.view().decided[KEY] == replace(
        source.view().decided[KEY], leader=3, leader_epoch=6, isr=(3, 1))
    assert changes == [1]
    source._fast_poll()  # broker 2 still says epoch 5: broker 1's newer word stands
    assert asked == [1, 2] and source.view().decided[KEY].leader == 3 and changes == [1]
    source._fast_poll()
    source._fast_poll()  # broker 1 again, the same answer object: nothing decided anew
    assert asked == [1, 2, 3, 1] and changes == [1]
    assert isinstance(source.view().decided[KEY], PartitionDecision)


def test_a_poll_longer_than_the_interval_is_followed_by_as_long_a_rest() -> None:
    """1,000 partitions poll in a fraction of the interval: once a second as before. A
    100,000-partition poll of seconds would otherwise run back to back, all of a core."""
    from kinspect.sources.admin import next_poll_in

    assert next_poll_in(1.0, 0.2) == pytest.approx(0.8)
    assert next_poll_in(1.0, 0.5) == pytest.approx(0.5)
    assert next_poll_in(1.0, 4.0) == pytest.approx(4.0)
    assert next_poll_in(0.2, 0.2) == pytest.approx(0.2)


def test_a_brokers_time_to_answer_grows_with_the_cluster() -> None:
    """A broker writes its answer about 100,000 partitions in more than the second that holds
    at 10,000: the per-broker questions' limits grow in proportion past BUDGET_PARTITIONS."""
    from kinspect.sources.admin import BUDGET_PARTITIONS
    from tests.helpers.kraft_fixtures import admin

    source = admin()
    assert source.budget(1.0) == 1.0 and source.budget(0.5) == 0.5
    source._partitions = BUDGET_PARTITIONS * 10
    assert source.budget(1.0) == 10.0 and source.budget(0.5) == 5.0
    source.timeout_s = 0.2  # a shorter timeout of the poll's own still counts
    assert source.budget(1.0) == pytest.approx(2.0)


def test_a_metadata_answer_seen_before_is_not_decoded_again() -> None:
    """Each broker's Metadata kept as bytes: the same topics section (every broker of a healthy
    cluster, every poll of an unchanged one) is decoded once; a changed one anew; the brokers
    and controller are each answer's own."""
    from kinspect.clients.wire import claims_of_bytes

    def answer(controller: int, leader: int) -> bytes:
        response = MetadataResponse[7](  # kept: kafka-python binds encode() weakly to it
            throttle_time_ms=0, brokers=[(1, "198.18.1.11", 9092, None)], cluster_id="c",
            controller_id=controller,
            topics=[(0, "t", False, [(0, 0, leader, 4, [1, 2], [1, 2], [])])])
        return bytes(response.encode())

    first, again = claims_of_bytes(answer(1, 1)), claims_of_bytes(answer(2, 1))
    assert first == claims_from(MetadataResponse[7].decode(io.BytesIO(answer(1, 1))))
    assert again.partitions is first.partitions and again.controller_id == 2
    moved = claims_of_bytes(answer(1, 2))
    assert moved.partitions == {("t", 0): BrokerClaim(2, (1, 2), (1, 2), 4)}


def test_answers_arriving_together_are_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The three brokers of a poll answer at once with the same bytes: one thread decodes, the
    others wait for its result (three decodes side by side tripled a 10,000-partition poll's
    cost)."""
    import threading
    import time

    from kinspect.clients import wire

    decodes: list[int] = []
    real = wire.topic_claims

    def slow_claims(section: bytes) -> dict[Any, BrokerClaim]:
        decodes.append(1)
        time.sleep(0.2)  # the others arrive meanwhile
        return real(section)

    monkeypatch.setattr(wire, "topic_claims", slow_claims)
    response = MetadataResponse[7](throttle_time_ms=0, brokers=[(1, "198.18.1.11", 9092, None)],
                                   cluster_id="c", controller_id=1,
                                   topics=[(0, "together", False,
                                            [(0, 0, 1, 9, [1, 2], [1, 2], [])])])
    raw = bytes(response.encode())
    seen: list[Any] = []
    threads = [threading.Thread(target=lambda: seen.append(wire.claims_of_bytes(raw).partitions))
               for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert decodes == [1] and len(seen) == 3 and all(p is seen[0] for p in seen)


def test_a_groups_probe_started_early_is_adopted_by_the_poll() -> None:
    """A one-shot command starts the groups' probe before it imports the observer: the poll
    takes that probe (no second one) and is told of its answers."""
    from kinspect.clients.groups_watch import GroupsWatch
    from kinspect.sources.admin import AdminSource

    early = GroupsWatch("127.0.0.1:1", {})
    told: list[int] = []
    source = AdminSource("127.0.0.1:1", lambda: told.append(1), groups=early)
    assert source.groups is early
    early._take('{"listed": ["g"], "groups": {"g": {"state": "stable", "members": 1, '
                '"committed": [["t", 0, 5]]}}}')
    assert told == [1] and early.view()["g"].committed == {("t", 0): 5}
    assert early.answered.is_set()


def test_only_a_replica_behind_the_leaders_epoch_or_a_watched_partition_asks_older_epochs() -> None:
    same = {1: ReplicaEnd(10, 5), 2: ReplicaEnd(10, 5)}
    assert older_epochs(same, 1, 5, watched=False) is None  # nearly every partition
    assert older_epochs({}, 1, 5, watched=False) is None
    behind = {1: ReplicaEnd(10, 5), 2: ReplicaEnd(12, 3), 3: ReplicaEnd(9, None)}
    assert older_epochs(behind, 1, 5, watched=False) == {3}
    assert older_epochs(behind, 1, 5, watched=True) == {3, 4}  # where epoch 5 starts
    ahead = {1: ReplicaEnd(10, 7), 2: ReplicaEnd(10, 5)}  # the leader heard of a newer epoch
    assert older_epochs(ahead, 1, 5, watched=False) == {5}
    assert older_epochs({1: ReplicaEnd(0, 0)}, 1, 0, watched=True) is None
