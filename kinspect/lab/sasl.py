"""An optional SASL_PLAINTEXT listener on every lab broker, so authentication is tested for real.

Brokers keep their PLAINTEXT listener (inter-broker traffic and the lab's own tools); the SASL
listener sits beside it on port + SASL_PORT_OFFSET and accepts PLAIN and SCRAM-SHA-256 for the
user `kinspect`. The password is random, kept in LAB_DIR/sasl-password (mode 600) and never
printed: `lab status` names the file, not its content.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kinspect.errors import KinspectError
from kinspect.lab.state import LabState, NodeRecord, load_state

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

SASL_PORT_OFFSET = 1000
USERNAME = "kinspect"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256")
OAUTHBEARER = "OAUTHBEARER"  # --sasl oauthbearer: taken as well, tokens from the lab (oauth.py)


def password_file(root: Path) -> Path:
    return root / "sasl-password"


def plan(root: Path, mechanism: str) -> JsonObject:
    """Choose the password (kept on disk, private) and describe the listener for the state."""
    if mechanism.upper() not in (*MECHANISMS, OAUTHBEARER):
        raise KinspectError("--sasl must be one of "
                            f"{', '.join(m.lower() for m in (*MECHANISMS, OAUTHBEARER))}")
    path = password_file(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_urlsafe(18))
    return {"mechanism": mechanism.upper(), "username": USERNAME, "password_file": str(path),
            "port_offset": SASL_PORT_OFFSET}


def secret_files(root: Path | None = None) -> list[Path]:
    """The lab's password files (its own user's and those `lab user add` made) when the lab on
    disk has a SASL listener: a run dir keeps a secret such a file holds as a reference to it,
    not as ***."""
    try:
        state = load_state(root)
    except (OSError, ValueError, TypeError):
        return []
    info = (state.extra.get("sasl") or {}) if state else {}
    if not info.get("password_file"):
        return []
    own = Path(info["password_file"])
    return [own, *sorted(own.parent.glob("users/*.password"))]


def sasl_address(node: NodeRecord) -> str:
    return f"{node.host}:{node.port + SASL_PORT_OFFSET}"


def bootstrap(state: LabState) -> str | None:
    if "sasl" not in state.extra:
        return None
    return ",".join(sasl_address(b) for b in state.brokers)


def listeners(node: NodeRecord, state: LabState) -> list[tuple[str, str]]:
    """(listener name, address) of the SASL_PLAINTEXT listener; none without --sasl."""
    return [("SASL_PLAINTEXT", sasl_address(node))] if "sasl" in state.extra else []


def broker_settings(state: LabState, sasl_listeners: list[str]) -> dict[str, str]:
    """The mechanisms and each SASL listener's logins (PLAIN's user list, SCRAM's credentials
    kept by Kafka itself); empty when the lab has no SASL listener."""
    info = state.extra.get("sasl")
    if not info or not sasl_listeners:
        return {}
    password = Path(info["password_file"]).read_text().strip()
    plain = (f"org.apache.kafka.common.security.plain.PlainLoginModule required "
             f'user_{USERNAME}="{password}";')
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    bearer = (OAUTHBEARER,) if "oauth" in state.extra else ()
    settings = {"sasl.enabled.mechanisms": ",".join((*MECHANISMS, *bearer))}
    for name in sasl_listeners:
        settings[f"listener.name.{name.lower()}.plain.sasl.jaas.config"] = plain
        settings[f"listener.name.{name.lower()}.scram-sha-256.sasl.jaas.config"] = scram
    return settings


def create_scram_user(state: LabState, timeout_s: float = 60.0) -> None:
    """SCRAM credentials live in ZooKeeper; set them through the PLAINTEXT listener.

    Right after the controller is elected the brokers may not yet know it ("Failed while
    waiting for controller"), so wait for full metadata and ask again until the deadline.
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    from kinspect.clients.kafka import quiet_admin
    from kinspect.lab.topics import wait_for_brokers

    deadline = time.monotonic() + timeout_s
    wait_for_brokers(state.bootstrap, len(state.brokers), timeout_s)
    info = state.extra["sasl"]
    password = Path(info["password_file"]).read_text().strip().encode()
    upsert = UserScramCredentialUpsertion(
        USERNAME, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), password)
    admin = quiet_admin(state.bootstrap)
    while True:
        try:
            for future in admin.alter_user_scram_credentials([upsert], request_timeout=10).values():
                future.result()
            return
        except KafkaException as exc:
            if time.monotonic() > deadline:
                raise KinspectError(f"could not create the SCRAM user {USERNAME}: "
                                    f"{exc.args[0].str()}") from None
            time.sleep(0.5)
