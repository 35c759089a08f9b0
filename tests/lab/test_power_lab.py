"""A power cut of every broker at once, as Kafka's defaults meet it: `acks=all`, RF 3 and
min ISR 2 lose what was acknowledged from the page cache, and `flush.messages=1` loses nothing.

Judged by what is not kinspect: the producer's own delivery reports say what was acknowledged,
kcat reads what survived after power-on, and DumpLogSegments reads the batches the filesystem
kept as dropped: every acknowledged message that is gone lies in them."""

from __future__ import annotations

import json

import pytest

from kinspect.lab import power
from kinspect.model.findings import SHOWN_TOPICS
from tests.helpers import kinspect
from tests.helpers.lab import Lab
from tests.helpers.oracles import kafka_topics
from tests.helpers.power import COUNT, create, dropped_values, produce_acked, read_back

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.resets_lab,
              pytest.mark.skipif(power.problem() is not None,
                                 reason=f"no power loss here: {power.problem()}")]

LAZY, SYNCED = "power-lazy", "power-synced"


def test_a_power_cut_of_every_broker_loses_what_was_only_in_the_page_cache(
        lab_session: Lab, lab_backend: str) -> None:
    lab = lab_session.ensure_up(lab_backend, power=True)
    assert lab["power"] is True
    bootstrap = lab["bootstrap"]
    create(bootstrap, LAZY)
    create(bootstrap, SYNCED, "flush.messages=1")
    # What kinspect reads of the flush settings is what the topics were created with (the
    # oracle: kafka-topics --create above), and only the topic that never fsyncs is found.
    snap = json.loads(kinspect("snapshot", "--json").stdout)
    flush = {t["name"]: t["flush"] for t in snap["topics"] if t["name"] in (LAZY, SYNCED)}
    assert flush[SYNCED]["messages"] == 1 and flush[SYNCED]["messages_words"] == "every message"
    assert flush[LAZY]["messages"] == 2**63 - 1 and flush[LAZY]["messages_words"] == "never"
    # The lab is shared with earlier tests, so other topics may never fsync too: the one line
    # names the first few of them and counts the rest, and never names the synced topic.
    never = [t["name"] for t in snap["topics"] if t["flush"].get("messages_words") == "never"]
    assert LAZY in never and SYNCED not in never
    advice = [f["message"] for f in snap["warnings"] if f["kind"] == "no_fsync"]
    assert len(advice) == 1
    named = advice[0].split(":")[0]
    assert SYNCED not in named
    assert LAZY in named or f"and {len(never) - SHOWN_TOPICS:,} more" in named
    acked = {topic: produce_acked(bootstrap, topic) for topic in (LAZY, SYNCED)}
    assert len(acked[LAZY]) == COUNT and len(acked[SYNCED]) == COUNT

    said = kinspect("lab", "power-off", "all").stdout
    assert said.count("powered off kafka") == 3
    cuts = sorted((lab_session.home / "lab" / "power-cuts").iterdir())[-3:]
    records = [json.loads((cut / "cut.json").read_text()) for cut in cuts]
    assert all(r["files"] for r in records)  # each broker had writes never on disk
    status = json.loads(kinspect("lab", "status", "--json").stdout)
    assert {n["name"]: n["state"] for n in status["nodes"] if n["role"] == "broker"} == {
        f"kafka{i}": "powered-off" for i in (1, 2, 3)}

    kinspect("lab", "power-on", "all", timeout=240)
    described = kafka_topics(bootstrap, topic=LAZY)
    assert all(row["leader"] is not None and row["leader"] > 0 for row in described)

    lost = set(acked[LAZY]) - read_back(bootstrap, LAZY)
    assert lost, "writes acknowledged from the page cache survived a power cut of every replica"
    assert lost <= dropped_values(cuts, LAZY)  # each one lies in a range the filesystem dropped
    # Fsynced after every append: nothing acknowledged is lost, nothing of it was dropped.
    assert set(acked[SYNCED]) <= read_back(bootstrap, SYNCED)
    assert not set(acked[SYNCED]) & dropped_values(cuts, SYNCED)
