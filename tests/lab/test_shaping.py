"""Link shaping as command lines: netem where the kernel has it, tbf + iptables where not."""

from __future__ import annotations

import pytest

from kinspect.errors import KinspectError
from kinspect.lab import shaping
from kinspect.lab.shaping import Direction, Kit, LinkShape

NO_NETEM = Kit(netem=False, tbf=True, ifb=True, statistic=True)
NETEM = Kit(netem=True, tbf=True, ifb=True, statistic=True)


def test_without_netem_rate_is_tbf_and_loss_is_iptables_on_each_direction() -> None:
    commands = shaping.shape_commands(LinkShape(rate_kbit=256, loss_pct=5), NO_NETEM)
    lines = [" ".join(c) for c in commands]
    assert any(line.startswith("tc qdisc replace dev eth0 root tbf rate 256kbit") for line in lines)
    assert any(line.startswith(f"tc qdisc replace dev {shaping.IFB} root tbf rate 256kbit")
               for line in lines)  # what it receives: through the ifb device
    assert [line for line in lines if "statistic" in line] == [
        f"iptables -A {shaping.CHAIN_OUT} -o eth0 -m statistic --mode random "
        "--probability 0.0500 -j DROP",
        f"iptables -A {shaping.CHAIN_IN} -i eth0 -m statistic --mode random "
        "--probability 0.0500 -j DROP"]


def test_one_direction_shapes_only_that_way() -> None:
    inbound = [" ".join(c) for c in shaping.shape_commands(
        LinkShape(rate_kbit=100, loss_pct=1, direction=Direction.IN), NO_NETEM)]
    assert not any("dev eth0 root" in line or "-o eth0" in line for line in inbound)
    assert any("-i eth0" in line for line in inbound)
    outbound = [" ".join(c) for c in shaping.shape_commands(
        LinkShape(loss_pct=1, direction=Direction.OUT), NO_NETEM)]
    assert outbound == [f"iptables -A {shaping.CHAIN_OUT} -o eth0 -m statistic --mode random "
                        "--probability 0.0100 -j DROP"]  # loss alone needs no qdisc


def test_netem_does_it_all_in_one_qdisc() -> None:
    shape = LinkShape(delay_ms=300, jitter_ms=100, rate_kbit=512, loss_pct=2,
                      direction=Direction.OUT)
    assert shaping.shape_commands(shape, NETEM) == [
        ["tc", "qdisc", "replace", "dev", "eth0", "root", "netem", "delay", "300ms", "100ms",
         "loss", "2%", "rate", "512kbit"]]
    assert NETEM.mechanism(shape) == "netem"
    assert NO_NETEM.mechanism(LinkShape(rate_kbit=1, loss_pct=1)) == \
        "tbf + iptables, netem not in this kernel"


def test_what_this_kernel_cannot_do_is_refused_in_one_line() -> None:
    with pytest.raises(KinspectError, match="--delay needs netem"):
        shaping.shape_commands(LinkShape(delay_ms=100), NO_NETEM)
    bare = Kit(netem=False, tbf=False, ifb=False, statistic=True)
    assert bare.unavailable is not None and "tbf" in bare.unavailable
    assert Kit(False, True, False, True).refuse(LinkShape(rate_kbit=10)) is not None  # no ifb
    assert Kit(False, True, False, True).refuse(
        LinkShape(rate_kbit=10, direction=Direction.OUT)) is None
    assert NO_NETEM.words == "tbf + iptables (netem not in this kernel)"


@pytest.mark.parametrize(("shape", "message"), [
    (LinkShape(), "needs --delay, --rate or --loss"),
    (LinkShape(rate_kbit=10, jitter_ms=5), "give --delay too"),
    (LinkShape(delay_ms=10, jitter_ms=50), "not be more than --delay"),
])
def test_a_shape_that_is_not_one_is_refused(shape: LinkShape, message: str) -> None:
    with pytest.raises(KinspectError, match=message):
        shape.check()


@pytest.mark.parametrize(("text", "kbit"), [("200kbit", 200), ("1mbit", 1000), ("1.5m", 1500),
                                             ("64", 64), ("2 Mbit", 2000)])
def test_rates_in_the_words_tc_uses(text: str, kbit: int) -> None:
    assert shaping.parse_rate(text) == kbit


@pytest.mark.parametrize("text", ["fast", "1tbit", "0", "4kbit", "-5"])
def test_a_rate_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(KinspectError, match="--rate"):
        shaping.parse_rate(text)


def test_loss_is_a_percentage() -> None:
    assert shaping.parse_loss("5%") == 5.0 and shaping.parse_loss("0.5") == 0.5
    for bad in ("0", "101", "nan", "half"):
        with pytest.raises(KinspectError, match="--loss"):
            shaping.parse_loss(bad)


def test_the_probe_and_the_leftover_check_read_the_tools_output() -> None:
    assert shaping.kit_from_probe("tbf\nifb\nstatistic\n") == NO_NETEM
    qdiscs = ("qdisc noqueue 0: dev lo root refcnt 2\n"
              "qdisc tbf 8006: dev eth0 root refcnt 3 rate 256Kbit burst 2999b lat 1s\n"
              "qdisc ingress ffff: dev eth0 parent ffff:fff1 ----------------\n")
    rules = f"-N {shaping.CHAIN_IN}\n-A {shaping.CHAIN_IN} -i eth0 -m statistic -j DROP\n"
    links = f"5: {shaping.IFB}: <BROADCAST,NOARP,UP,LOWER_UP> mtu 1500\n"
    assert len(shaping.left_behind(qdiscs, links, rules)) == 4
    clean = ("qdisc noqueue 0: dev lo root refcnt 2\n", "", f"-N {shaping.CHAIN_IN}\n")
    assert shaping.left_behind(*clean) == []
