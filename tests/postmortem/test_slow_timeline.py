"""The post-mortem ties ISR shrinks to slowed links: when, how long after, and back."""

from __future__ import annotations

from kinspect.lab.journal import JournalEntry
from kinspect.model.events import TimelineEvent
from kinspect.postmortem.evidence.inputs import fault_event, observer_events
from kinspect.postmortem.story import timeline as tl
from kinspect.postmortem.story.report import slow_link_markdown


def _journal(ts: int, action: str, node: str | None, detail: str) -> TimelineEvent:
    return fault_event(JournalEntry(ts, action, node=node, detail=detail))


def test_a_shrink_of_a_slowed_broker_is_timed_and_said() -> None:
    faults = [_journal(1_000, "slow", "kafka2", "slow kafka2: rate 256 kbit + 5 % loss, inbound "
                                               "(tbf + iptables, netem not in this kernel)"),
              _journal(40_000, "unslow", "kafka2", "unslow kafka2: full speed")]
    observer = [
        {"ts": 11_500, "kind": "isr_shrank", "partition": "test1-0", "replica": 2,
         "isr": [1, 3], "detail": "2 left the ISR → [1, 3]"},
        {"ts": 12_000, "kind": "isr_shrank", "partition": "test1-0", "replica": 3,
         "isr": [1], "detail": "3 left the ISR → [1]"},  # not slowed: not blamed on the link
        {"ts": 45_000, "kind": "isr_expanded", "partition": "test1-0", "replica": 2,
         "isr": [1, 2], "detail": "2 rejoined the ISR → [1, 2]"}]
    seen, skipped = observer_events(enumerate(observer, 1))
    assert skipped == {} and len(seen) == 3
    events, lines = tl.slow_links(tl.merge(seen, faults, [], "test1"))
    assert [line.to_json() for line in lines] == [{
        "node": "kafka2", "broker": 2, "slowed_ts": 1_000, "left_isr_ts": 11_500,
        "left_isr_ms": 10_500, "unslowed_ts": 40_000, "rejoined_ts": 45_000,
        "shape": "rate 256 kbit + 5 % loss, inbound (tbf + iptables, netem not in this kernel)"}]
    shrinks = [e for e in events if e.kind == "isr_shrank"]
    assert shrinks[0].detail.endswith("(slowed link: broker 2 for 10.5 s)")
    assert not shrinks[1].slowed
    assert tl.smallest_isr(events) == 1
    text = "\n".join(slow_link_markdown([line.to_json() for line in lines]))
    assert "left the ISR at" in text and "10.5 s later" in text and "back in the ISR" in text


def test_a_shrink_after_the_link_is_restored_is_not_blamed_on_it() -> None:
    faults = [_journal(1_000, "slow", "kafka3", "slow kafka3: 5 % loss, both ways (iptables)"),
              _journal(2_000, "unslow", None, "links at full speed")]
    observer = [{"ts": 30_000, "kind": "isr_shrank", "partition": "test1-0", "replica": 3,
                 "isr": [1, 2], "detail": "3 left the ISR → [1, 2]"}]
    seen, skipped = observer_events(enumerate(observer, 1))
    assert skipped == {}
    _, lines = tl.slow_links(tl.merge(seen, faults, [], "test1"))
    assert lines[0].left_isr_ts is None and lines[0].unslowed_ts == 2_000
    assert "never left the ISR" in slow_link_markdown([line.to_json() for line in lines])[-1]
