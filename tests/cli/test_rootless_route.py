"""Which commands re-run inside a rootless lab's namespace, and what a dead namespace says.

The suite runs as root, where nothing is routed; these tests take the unprivileged user's
side by patching `is_root` (the real unprivileged runs are in tests/lab/test_rootless_lab.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kinspect.cli import build_parser, rootless
from kinspect.errors import KinspectError
from kinspect.lab import userns


@pytest.fixture
def unprivileged(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr(userns, "is_root", lambda: False)
    monkeypatch.delenv(userns.HOLDER_ENV, raising=False)
    monkeypatch.setenv("KINSPECT_HOME", str(tmp_path))
    (tmp_path / "lab").mkdir()
    return tmp_path / "lab"


def dead_holder(lab: Path) -> userns.Holder:
    """A holder whose pid is gone (pid_max is far below this)."""
    holder = userns.Holder(pid=2**22 + 7, unshare_pid=2**22 + 6, uid=1000)
    (lab / userns.HOLDER_FILE).write_text(json.dumps(holder.__dict__))
    return holder


def route(*argv: str) -> int | None:
    return rootless.route(build_parser().parse_args(list(argv)), list(argv))


@pytest.mark.parametrize("argv", [
    ("lab", "fetch"), ("lab", "images"), ("doctor",),
    ("snapshot", "--bootstrap", "prod:9092"), ("health", "--profile", "prod")])
def test_what_never_needs_the_lab_stays_on_the_host(unprivileged: Path,
                                                    argv: tuple[str, ...]) -> None:
    dead_holder(unprivileged)  # even with a rootless lab's record there
    assert route(*argv) is None


def test_nothing_is_routed_for_root_or_from_inside(monkeypatch: pytest.MonkeyPatch,
                                                   unprivileged: Path) -> None:
    dead_holder(unprivileged)
    monkeypatch.setenv(userns.HOLDER_ENV, "4242")
    assert route("lab", "status") is None
    monkeypatch.delenv(userns.HOLDER_ENV)
    monkeypatch.setattr(userns, "is_root", lambda: True)
    assert route("lab", "status") is None


def test_a_dead_namespace_is_one_line_and_lab_down_tidies(unprivileged: Path) -> None:
    holder = dead_holder(unprivileged)
    (unprivileged / "state.json").write_text("{}")
    with pytest.raises(KinspectError, match=f"holder pid {holder.pid}.*kinspect lab down"):
        route("lab", "status")
    assert route("lab", "down") == 0
    assert not (unprivileged / "state.json").exists()
    assert userns.read_holder(unprivileged) is None


def test_without_a_lab_only_commands_that_make_one_start_a_namespace(
        unprivileged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[Path] = []
    monkeypatch.setattr(userns, "start_holder", started.append)
    assert route("lab", "status") is None  # no lab: the host says so
    assert route("lab", "up", "--network", "loopback") is None
    assert route("lab", "up", "--backend", "docker") is None
    assert started == []


def test_where_namespaces_are_refused_the_loopback_lab_remains(
        unprivileged: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    why = "AppArmor restricts unprivileged user namespaces; one root step: sudo sysctl ..."
    monkeypatch.setattr(userns, "userns_support", lambda: why)
    assert route("lab", "up", "--backend", "process") is None
    said = capsys.readouterr().err.strip().splitlines()
    assert said == [f"kinspect: a lab with network faults needs root or user namespaces: {why}; "
                    "this lab runs on loopback"]


@pytest.mark.parametrize("setting, value, words", [
    ("MAX_USERNS", "0", "sudo sysctl -w user.max_user_namespaces=15000"),
    ("DEBIAN_CLONE", "0", "sudo sysctl -w kernel.unprivileged_userns_clone=1"),
    ("APPARMOR_SYSCTL", "1", "kernel.apparmor_restrict_unprivileged_userns=0")])
def test_each_kernel_setting_that_forbids_it_names_its_root_step(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, setting: str, value: str,
        words: str) -> None:
    for name in ("MAX_USERNS", "DEBIAN_CLONE", "APPARMOR_SYSCTL"):
        monkeypatch.setattr(userns, name, tmp_path / f"absent-{name}")
    (tmp_path / setting).write_text(value + "\n")
    monkeypatch.setattr(userns, setting, tmp_path / setting)
    reason = userns.blocked_by_settings()
    assert reason is not None and words in reason
