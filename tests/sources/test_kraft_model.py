"""KRaft in the model: the newest claim decides, the quorum leader is the controller, a broker
missing from the metadata is fenced; the JSON, the events and the header say so (pure: the
brokers' and the quorum's answers are built here as the sources would hand them over)."""

from __future__ import annotations

from dataclasses import replace

from kinspect.clients.wire import BrokerClaim
from kinspect.model import (
    ControllerAnswer,
    EventKind,
    assess,
    diff,
    snapshot_from_json,
    snapshot_to_json,
)
from kinspect.sources.claims import newest_claims
from kinspect.tui.render import broker_rows, header_text
from tests.helpers.kraft_fixtures import CLAIMS, KEY, admin, kraft_snapshot, kraft_view, quorum
from tests.helpers.model_fixtures import T0, demo_snapshot

# Broker 1 was cut off: it still leads at epoch 4; the controller moved the lead to 2 at epoch 5.
# Broker 3 heard epoch 5 too, before the ISR lost 1 (an ISR change keeps the leader epoch).










def test_the_newest_claim_decides_and_the_leader_has_the_last_word_at_equal_epochs() -> None:
    assert newest_claims(CLAIMS)[KEY] == CLAIMS[2][KEY]
    unknown = {1: {KEY: BrokerClaim(1, (1,), (1,), -1)}}  # Metadata before v7: no epoch
    assert newest_claims(unknown) == {}


def test_brokers_sharing_one_decoded_answer_decide_as_if_each_had_its_own() -> None:
    """Identical answers are one dict shared by their brokers (decoded once): read once, with
    the same winner as when every broker's answer is its own copy."""
    a, b = ("t", 0), ("t", 1)
    shared = {a: BrokerClaim(3, (1, 2, 3), (1, 3), 7), b: BrokerClaim(1, (1, 2), (1,), 2)}
    other = {a: BrokerClaim(2, (1, 2, 3), (2, 3), 7), b: BrokerClaim(2, (1, 2), (2,), 2)}
    for holders in ((1, 3), (1, 2), (2, 3)):
        together = {h: shared for h in holders} | {next(x for x in (1, 2, 3)
                                                      if x not in holders): other}
        apart = {broker: dict(claims) for broker, claims in together.items()}
        assert newest_claims(together) == newest_claims(apart), holders
    alone = {1: shared, 2: shared, 3: shared}
    assert newest_claims(alone) == newest_claims({k: dict(v) for k, v in alone.items()}) == shared


def test_a_decision_keeps_when_it_was_first_seen_until_its_epoch_changes() -> None:
    source = admin()
    first = source._decisions(CLAIMS, T0)[KEY]
    assert (first.leader, first.leader_epoch, first.isr, first.seen_ms) == (2, 5, (2, 3), T0)
    assert source._decisions(CLAIMS, T0 + 1000)[KEY].seen_ms == T0
    moved = {**CLAIMS, 3: {KEY: BrokerClaim(3, (1, 2, 3), (3,), 6)}}
    assert source._decisions(moved, T0 + 2000)[KEY].seen_ms == T0 + 2000


def test_the_decision_is_shown_and_the_stale_self_claim_is_the_zombie() -> None:
    p = kraft_snapshot().partition(*KEY)
    assert p is not None
    assert (p.leader, p.leader_epoch, p.isr) == (2, 5, (2, 3))
    assert (p.broker_leader, p.views_disagree) == (1, True)
    # Heard of a moment ago: the other brokers are given the grace ZooKeeper's changes get.
    fresh = kraft_snapshot(kraft_view(seen_ms=T0)).partition(*KEY)
    assert fresh is not None and (fresh.leader, fresh.views_disagree) == (2, False)


def test_the_controller_is_the_quorum_leader_never_the_broker_metadata_names() -> None:
    s = kraft_snapshot()
    assert (s.mode, s.controller.id, s.controller.epoch) == ("kraft", 101, 7)
    assert s.controller.broker_reported_id == 3
    assert s.quorum is not None
    lags = {m.id: m.lag for m in s.quorum.voters + s.quorum.observers}
    assert lags == {101: 0, 102: 12, 103: None, 1: 0, 2: 3}
    assert not any("ZooKeeper" in line for line in s.limitations)
    unknown = kraft_snapshot(kraft_view(error="b1:9092: no answer in 1.0 s"))
    assert (unknown.controller.id, unknown.quorum) == (None, None)
    assert unknown.limitations == ("KRaft quorum: b1:9092: no answer in 1.0 s; the active "
                                   "controller is unknown",)
    assert unknown.findings[0].kind == "no_controller"


def test_a_broker_missing_from_the_metadata_is_fenced() -> None:
    s = kraft_snapshot(kraft_view(listed=(1, 2)))
    assert {b.id: b.fenced for b in s.brokers} == {1: False, 2: False, 3: True}
    assert {b.id: b.registered for b in s.brokers} == {1: None, 2: None, 3: None}
    assert "broker_fenced" in {w.kind for w in s.findings}
    rows = {r.broker_id: r.cells[3].plain for r in broker_rows(s, None)}
    assert rows == {1: "yes", 2: "yes", 3: "FENCED"}
    report = assess(s)
    assert (report.brokers_registered, report.controller_ok) == ((1, 2), True)
    assert not assess(kraft_snapshot(kraft_view(error="no answer"))).controller_ok


def test_snapshot_json_says_the_mode_and_only_kraft_has_a_quorum() -> None:
    s = kraft_snapshot()
    data = snapshot_to_json(s)
    assert data["mode"] == "kraft"
    assert data["controller"] == {"id": 101, "epoch": 7, "broker_reported_id": 3}
    q = data["quorum"]
    assert (q["leader_id"], q["leader_epoch"], q["high_watermark"]) == (101, 7, 1234)
    assert q["voters"][1] == {"id": 102, "log_end_offset": 1228, "lag": 12,
                              "last_fetch_ms": T0 - 30, "last_caught_up_ms": T0 - 500}
    assert q["voters"][2]["log_end_offset"] is None
    assert [o["id"] for o in q["observers"]] == [1, 2]
    assert [b["fenced"] for b in data["brokers"]] == [False, False, False]
    assert snapshot_from_json(data) == s
    zk = snapshot_to_json(demo_snapshot())
    assert zk["mode"] == "zookeeper"
    assert "quorum" not in zk and all("fenced" not in b for b in zk["brokers"])


def test_fencing_and_a_new_quorum_leader_are_events() -> None:
    before = kraft_snapshot()
    after = kraft_snapshot(replace(kraft_view(listed=(1, 2), answer=quorum(102, 8)),
                                   polled_at_ms=T0 + 1000), taken_at=T0 + 1000)
    events = diff(before, after)
    kinds = {e.kind: e for e in events}
    assert kinds[EventKind.CONTROLLER_CHANGED].detail == "quorum leader 101 → 102 (epoch 8)"
    assert (kinds[EventKind.BROKER_FENCED].broker, kinds[EventKind.BROKER_FENCED].severity) \
        == (3, "error")
    back = diff(after, replace(before, taken_at=T0 + 2000))
    assert [(e.kind, e.broker) for e in back if e.kind == EventKind.BROKER_UNFENCED] \
        == [(EventKind.BROKER_UNFENCED, 3)]
    # The mode just learnt (the first polls reached no broker): nothing was fenced or unfenced.
    learnt = diff(replace(after, mode="unknown"), before)
    assert not {EventKind.BROKER_FENCED, EventKind.BROKER_UNFENCED} & {e.kind for e in learnt}


def test_a_controller_still_leading_at_an_old_epoch_is_warned_about() -> None:
    stale = (ControllerAnswer(101, "198.18.1.101:9093", "leader", 6),
             ControllerAnswer(102, "198.18.1.102:9093", "leader", 7),
             ControllerAnswer(103, "198.18.1.103:9093", "unreachable", error="refused"))
    s = kraft_snapshot(kraft_view(answer=quorum(102, 7), controllers=stale))
    warning = next(w for w in s.findings if w.kind == "stale_quorum_leader")
    assert warning.message == ("controller 101 still answers as quorum leader at epoch 6 "
                               "(the quorum is at 7)")
    lines = header_text(s, T0 + 100, "lab").plain.split("\n")
    assert "no answer from 103" in lines[1] and "101 still leads at epoch 6" in lines[1]


def test_the_header_names_the_quorum_leader_and_shows_the_quorum() -> None:
    s = kraft_snapshot()
    first, second = header_text(s, T0 + 100, "lab", ("AdminClient: timed out",)).plain.split("\n")
    assert "controller 101 (quorum leader, epoch 7)" in first
    assert "controller 3" not in first and "ZooKeeper" not in first
    assert first.endswith("FAILING: AdminClient: timed out")
    assert second == "quorum hw 1,234 │ voters 101* 102:-12 103:? │ observers 1:✓ 2:-3"
    zk = header_text(demo_snapshot(), T0 + 100, "lab").plain
    assert "\n" not in zk and "controller 1 (epoch 3) │ ZK connected" in zk


def test_a_kraft_recording_replays_the_quorum_and_fencing_exactly() -> None:
    from kinspect.sources.recording import apply_delta, snapshot_delta

    before = kraft_snapshot()
    after = kraft_snapshot(replace(kraft_view(listed=(1, 2), answer=quorum(102, 8)),
                                   polled_at_ms=T0 + 1000), taken_at=T0 + 1000)
    assert apply_delta(before, snapshot_delta(before, after)) == after


def test_the_text_snapshot_says_kraft_and_fenced() -> None:
    from kinspect.cli.snapshot_text import render_snapshot

    text = render_snapshot(snapshot_to_json(kraft_snapshot(kraft_view(listed=(1, 2)))))
    assert text.splitlines()[:3] == [
        "controller 101 (quorum leader, epoch 7)   KRaft",
        "quorum hw 1234  (lag) 101*:ok  102:-12  103:?  1:ok  2:-3",
        "brokers: 1@198.18.1.11:9092  2@198.18.1.12:9092  3@? (FENCED)"]
