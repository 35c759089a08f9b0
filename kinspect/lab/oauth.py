"""`lab up --sasl oauthbearer`: the lab's SASL listeners also take OAUTHBEARER, validated by
Kafka's own OAuthBearerValidatorCallbackHandler against the lab's key set, and the lab serves
the token endpoint clients log in at (OAuth 2.0 client credentials, as an identity provider).

The lab makes an RSA key (LAB_DIR/oauth/key.pem, mode 600), the JSON Web Key Set of its public
half (oauth/jwks.json, which brokers read as a file: they need no route to this machine), and a
client `kinspect` with a random secret (oauth/client-secret, mode 600, never printed). The
endpoint (lab/token_endpoint.py) runs on this machine's loopback, tagged with the lab id, and
goes with `lab down`. Its tokens name the client as `sub`: the principal is User:kinspect, the
lab's super user when the authorizer is on.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kinspect.errors import KinspectError
from kinspect.lab.state import LabState
from kinspect.procs import read_process

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

CLIENT_ID = "kinspect"
AUDIENCE = "kafka"
ISSUER = "kinspect-lab"
KEY_ID = "kinspect-lab-1"
JWKS_FILE = "jwks.json"
VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
START_TIMEOUT_S = 20.0


def oauth_dir(root: Path) -> Path:
    return root / "oauth"


def enabled(state: LabState) -> bool:
    return "oauth" in state.extra


def _private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def plan(root: Path) -> JsonObject:
    """The key, its key set and the client's secret, on disk; what the state keeps of them."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    directory = oauth_dir(root)
    directory.mkdir(parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _private(directory / "key.pem", key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update({"kid": KEY_ID, "use": "sig", "alg": "RS256"})
    (directory / JWKS_FILE).write_text(json.dumps({"keys": [jwk]}))
    _private(directory / "client-secret", secrets.token_urlsafe(24).encode())
    return {"dir": str(directory), "client_id": CLIENT_ID,
            "client_secret_file": str(directory / "client-secret"),
            "audience": AUDIENCE, "issuer": ISSUER, "jwks": str(directory / JWKS_FILE)}


def jwks_path(state: LabState, directory: Path | None = None) -> Path:
    """Where a broker reads the key set (`directory`: a container's own copy)."""
    return (directory or Path(state.extra["oauth"]["dir"])) / JWKS_FILE


def broker_settings(state: LabState, sasl_listeners: list[str], directory: Path | None = None
                    ) -> dict[str, str]:
    """OAUTHBEARER on each SASL listener, validated against the key set's file; empty unless
    the lab was made with --sasl oauthbearer."""
    if not enabled(state) or not sasl_listeners:
        return {}
    settings = {"sasl.oauthbearer.jwks.endpoint.url": jwks_path(state, directory).as_uri(),
                "sasl.oauthbearer.expected.audience": AUDIENCE,
                "sasl.oauthbearer.expected.issuer": ISSUER}
    for name in sasl_listeners:
        prefix = f"listener.name.{name.lower()}.oauthbearer"
        settings[f"{prefix}.sasl.jaas.config"] = LOGIN_MODULE
        settings[f"{prefix}.sasl.server.callback.handler.class"] = VALIDATOR
    return settings


def jvm_flags(state: LabState, directory: Path | None = None) -> list[str]:
    """Kafka 3.9.1+/4.x read a key set only from a URL and file the JVM allows (CVE-2025-27817)."""
    if not enabled(state):
        return []
    path = jwks_path(state, directory)
    return [f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={path.as_uri()}",
            f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.files={path}"]


def node_files(state: LabState) -> dict[str, bytes]:
    """The key set, to copy into a broker's container."""
    return {JWKS_FILE: jwks_path(state).read_bytes()}


def start(state: LabState) -> JsonObject:
    """Start the token endpoint on loopback; what the state keeps of it (pid, URL)."""
    info = state.extra["oauth"]
    directory = Path(info["dir"])
    port_file = directory / "port"
    port_file.unlink(missing_ok=True)
    with open(directory / "endpoint.log", "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "kinspect.lab.token_endpoint", "--dir", str(directory),
             "--lab-id", state.lab_id], stdout=log, stderr=log, stdin=subprocess.DEVNULL,
            start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not port_file.is_file() or not port_file.read_text().strip():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            tail = (directory / "endpoint.log").read_text(errors="replace").strip()
            raise KinspectError("the lab's token endpoint did not start: "
                                f"{tail.splitlines()[-1] if tail else 'no output'}")
        time.sleep(0.05)
    port = int(port_file.read_text())
    return {**info, "pid": process.pid, "token_endpoint": f"http://127.0.0.1:{port}/token"}


def stop(state: LabState) -> None:
    """Stop the token endpoint this lab started (only a process carrying its lab id)."""
    pid = (state.extra.get("oauth") or {}).get("pid")
    if not isinstance(pid, int):
        return
    process = read_process(pid)
    if process is None or process.exited or state.lab_id.encode() not in process.args:
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return


def client_config(state: LabState) -> dict[str, str]:
    """librdkafka settings logging in at the lab's token endpoint (the secret by reference)."""
    info = state.extra["oauth"]
    return {"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.client.id": info["client_id"],
            "sasl.oauthbearer.client.secret": f"${{file:{info['client_secret_file']}}}",
            "sasl.oauthbearer.token.endpoint.url": info.get("token_endpoint", "")}
