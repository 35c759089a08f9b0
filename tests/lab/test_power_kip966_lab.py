"""KIP-966 on Kafka 4.x, as its own `kafka-topics --describe` says it: the last in-sync replica
loses power and comes back from an unclean shutdown. With eligible leader replicas on, the
controller no longer counts it in the ISR, and the follower that left last (clean, holding
everything committed) leads: nothing acknowledged is lost. With them off, the returning replica
leads again with what its disk kept, the followers truncate to it, and acknowledged writes go.
Every claim is Kafka's own tool's or kcat's, never kinspect's."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from kinspect.lab import power
from tests.helpers import kinspect, wait_until
from tests.helpers.oracles import kafka_topics
from tests.helpers.power import create, produce_acked, read_back

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.resets_lab, pytest.mark.extended,
              pytest.mark.skipif(power.problem() is not None,
                                 reason=f"no power loss here: {power.problem()}")]

TOPIC = "power-lazy"


def described(bootstrap: str) -> dict[str, Any]:
    return kafka_topics(bootstrap, topic=TOPIC, kafka="4")[0]


def settled_after_power_on(bootstrap: str, leader: int, elr: int) -> dict[str, Any]:
    """What Kafka decided once the powered-on broker registered: with ELR off it leads again
    (waited for); with ELR on, nobody may (the description after the controller had time)."""
    if not elr:
        return wait_until(lambda: _led_by(bootstrap, leader), 60, f"broker {leader} leading")
    time.sleep(5)  # power-on came back once the brokers answered: the controller has decided
    return described(bootstrap)


def _led_by(bootstrap: str, leader: int) -> dict[str, Any] | None:
    row = described(bootstrap)
    if row["leader"] == leader:
        return row
    return None


@pytest.mark.parametrize("elr", [1, 0], ids=["elr-on", "elr-off"])
def test_the_last_isr_member_back_from_a_power_cut(lab_session: Any, lab_backend: str,
                                                   elr: int) -> None:
    lab_session.down()
    lab = json.loads(kinspect("lab", "up", "--backend", lab_backend, "--mode", "kraft",
                              "--kafka", "4.x", "--power", "--feature",
                              f"eligible.leader.replicas.version={elr}", "--json",
                              timeout=400).stdout)
    bootstrap = lab["bootstrap"]
    create(bootstrap, TOPIC)
    acked = produce_acked(bootstrap, TOPIC)
    leader = described(bootstrap)["leader"]
    first, last = [b for b in (1, 2, 3) if b != leader]
    for broker, isr in ((first, 2), (last, 1)):  # clean stops: the ISR shrinks to the leader
        kinspect("lab", "stop", f"kafka{broker}")
        wait_until(lambda n=isr: len(described(bootstrap)["isr"] or ()) == n, 60,
                   f"the ISR down to {isr}")
    if elr:
        assert described(bootstrap)["elr"] == (last,)  # KIP-966: it holds all committed
    kinspect("lab", "power-off", f"kafka{leader}")
    kinspect("lab", "power-on", f"kafka{leader}", timeout=240)
    after = settled_after_power_on(bootstrap, leader, elr)
    kinspect("lab", "start", f"kafka{last}", timeout=240)
    kinspect("lab", "start", f"kafka{first}", timeout=240)
    wait_until(lambda: len(described(bootstrap)["isr"] or ()) == 3, 120, "the full ISR back")
    lost = set(acked) - read_back(bootstrap, TOPIC)
    if elr:
        assert leader not in (after["isr"] or ()), after  # back from an unclean shutdown
        assert after["leader"] is None, after  # nobody eligible until the ELR member returns
        assert not lost, f"{len(lost)} acknowledged messages lost with ELR on"
    else:
        assert after["leader"] == leader and after["isr"] == (leader,), after
        assert lost, "the last ISR member led again without its page cache, and lost nothing?"
