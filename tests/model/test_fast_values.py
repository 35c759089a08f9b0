"""fast_init: the model's per-partition values built without the frozen dataclass's setattr
calls, yet the same values: equal, hashable, frozen, with their defaults, replace-able."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from kinspect.model.fast_values import fast_init
from kinspect.model.snapshot import PartitionInfo, ReplicaLog
from kinspect.model.views import Offsets


@dataclass(frozen=True, slots=True)
class Generated:
    a: int
    b: tuple[int, ...]
    c: str | None = None
    d: int = 7


Fast = fast_init(dataclass(frozen=True, slots=True)(type("Fast", (), {
    "__annotations__": {"a": "int", "b": "tuple[int, ...]", "c": "str | None", "d": "int"},
    "c": None, "d": 7})))


def test_the_fast_init_builds_what_the_generated_one_does() -> None:
    for args, kwargs in [((1, (2,)), {}), ((1, (2,), "x"), {}), ((1,), {"b": (), "d": 9})]:
        made, expected = Fast(*args, **kwargs), Generated(*args, **kwargs)
        assert dataclasses.astuple(made) == dataclasses.astuple(expected)
    assert Fast(1, (2,)) == Fast(1, (2,)) and hash(Fast(1, (2,))) == hash(Fast(1, (2,)))
    with pytest.raises(TypeError):
        Fast(1)  # a missing field is refused as before
    with pytest.raises(dataclasses.FrozenInstanceError):
        Fast(1, ()).a = 2  # type: ignore[misc]
    assert dataclasses.replace(Fast(1, (), "x"), d=3) == Fast(1, (), "x", 3)


def test_the_models_values_use_it_and_stay_frozen() -> None:
    log = ReplicaLog(2, 10, 4, 0)
    assert (log.broker, log.log_end, log.epoch, log.lag, log.diverged) == (2, 10, 4, 0, 0)
    assert Offsets(5, 0, 3) == Offsets(5, 0, 3)
    for cls in (PartitionInfo, ReplicaLog, Offsets):
        assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
    assert not hasattr(log, "__dict__")  # slots: reads stay fast, no dict per replica
    with pytest.raises(dataclasses.FrozenInstanceError):
        log.lag = 1  # type: ignore[misc]


@pytest.mark.parametrize("shape", [
    dataclass(frozen=True)(type("NoSlots", (), {"__annotations__": {"a": "int"}})),
    dataclass(slots=True)(type("NotFrozen", (), {"__annotations__": {"a": "int"}})),
])
def test_a_class_it_cannot_serve_is_refused(shape: type) -> None:
    with pytest.raises(TypeError, match="fast_init is for"):
        fast_init(shape)


def test_a_default_factory_is_refused() -> None:
    @dataclass(frozen=True, slots=True)
    class Listed:
        a: list[int] = field(default_factory=list)

    with pytest.raises(TypeError, match="needs the generated __init__"):
        fast_init(Listed)
