"""Secrets stay out of run dirs: settings.json keeps references or ***; a refused login is
said in one line (the pure parts; the lab test is in tests/cli/test_oncall_lab.py)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError

from kinspect.clients.kafka import AUTH_HINT, AuthWatch, auth_reason, client_config
from kinspect.errors import KinspectError
from kinspect.lab import sasl
from kinspect.load.runsettings import SECRETS_NOTE, LoadSettings
from kinspect.profiles import load_profile


def profile_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LoadSettings:
    monkeypatch.setenv("KINSPECT_UNIT_PW", "env-secret-value")
    (tmp_path / "jaas").write_text("file-secret-value\n")
    config = tmp_path / "config.toml"
    config.write_text(f"""
[clusters.c]
bootstrap = "b:1"
[clusters.c.kafka]
"sasl.password" = "${{env:KINSPECT_UNIT_PW}}"
"sasl.jaas.config" = "${{file:{tmp_path / 'jaas'}}}"
"ssl.key.password" = "literal-secret-value"
"sasl.mechanism" = "PLAIN"
""")
    profile = load_profile("c", config)
    return LoadSettings(topic="t", bootstrap=profile.bootstrap, extra=dict(profile.kafka))


def test_settings_json_keeps_references_and_masks_literals(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    settings = profile_settings(tmp_path, monkeypatch)
    run_dir = tmp_path / "run"
    settings.save(run_dir)
    text = (run_dir / "settings.json").read_text()
    for secret in ("env-secret-value", "file-secret-value", "literal-secret-value"):
        assert secret not in text
    saved = json.loads(text)
    assert saved["extra"] == {"sasl.password": "${env:KINSPECT_UNIT_PW}",
                              "sasl.jaas.config": f"${{file:{tmp_path / 'jaas'}}}",
                              "ssl.key.password": "***", "sasl.mechanism": "PLAIN"}
    assert "ssl.key.password" in saved[SECRETS_NOTE]
    loaded = LoadSettings.load(run_dir)  # the note is not a field
    assert loaded.extra == saved["extra"]
    with pytest.raises(KinspectError, match=r"ssl\.key\.password was given as a literal"):
        loaded.with_secrets()
    del loaded.extra["ssl.key.password"]
    assert loaded.with_secrets().extra == {"sasl.password": "env-secret-value",
                                           "sasl.jaas.config": "file-secret-value",
                                           "sasl.mechanism": "PLAIN"}


def test_the_lab_password_is_kept_as_its_file(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sasl-password").write_text("lab-secret-value\n")
    state = SimpleNamespace(extra={"sasl": {"password_file": str(tmp_path / "sasl-password")}})
    monkeypatch.setattr("kinspect.lab.sasl.load_state", lambda root=None: state)
    settings = LoadSettings(topic="t", bootstrap="b:1",
                            extra={"sasl.password": "lab-secret-value", "acks": "all"})
    settings.save(tmp_path / "run", sasl.secret_files())
    saved = json.loads((tmp_path / "run" / "settings.json").read_text())
    assert saved["extra"]["sasl.password"] == f"${{file:{tmp_path / 'sasl-password'}}}"
    assert SECRETS_NOTE not in saved
    assert LoadSettings.load(tmp_path / "run").with_secrets().extra["sasl.password"] == \
        "lab-secret-value"


class FakeClient:
    def __init__(self, watch: Any, errors: list[KafkaError]) -> None:
        self.watch, self.errors = watch, errors

    def poll(self, _timeout: float) -> None:  # librdkafka serves error_cb only here
        for error in self.errors:
            self.watch(error)
        self.errors = []


def test_a_refused_login_is_one_line() -> None:
    config, watch = client_config({"bootstrap.servers": "k:9093", "sasl.password": "x"})
    assert config["error_cb"] is watch and config["logger"].name == "kinspect.librdkafka"
    error = KafkaError(KafkaError._AUTHENTICATION,
                       "sasl_plaintext://10.0.0.1:9093/bootstrap: SASL authentication error: "
                       "Authentication failed: Invalid username or password (after 305ms in "
                       "state AUTH_REQ)")
    assert auth_reason(error) == ("SASL authentication error: Authentication failed: Invalid "
                                  "username or password")
    client = FakeClient(watch, [KafkaError(KafkaError._TRANSPORT, "down"), error])
    assert watch.failure() is None  # nothing served yet
    with pytest.raises(KinspectError) as raised:
        watch.check(client)
    line = str(raised.value)
    assert line.startswith("authentication failed at k:9093: SASL authentication error")
    assert AUTH_HINT in line and "\n" not in line
    watch.clear()
    assert AuthWatch("x").failure() is None and watch.failure(FakeClient(watch, [])) is None
