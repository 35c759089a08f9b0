"""librdkafka clients that keep quiet and say, in one line, when the login was refused.

A refused SASL login reaches librdkafka's `error_cb` as KafkaError._AUTHENTICATION, a second
after connecting; the call that was waiting (list_topics, a delivery) only times out later as
"Broker transport failure", and meanwhile librdkafka logs a FAIL line per broker per retry.
`client_config` gives a client a silent logger and an error_cb that remembers the refusal;
`AuthWatch.check` turns it into the one line users see (a KinspectError, exit 2).

Callbacks run only inside poll()/flush()/consume(): `check` polls the client first, and
`list_topics` asks in short steps, so a refusal is said within a second instead of after the
whole timeout. `quiet_admin` is the AdminClient the lab's own tools use (no error_cb: they
talk PLAINTEXT to the lab).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from kinspect.errors import KinspectError

AUTH_FAILED = "authentication failed"
AUTH_HINT = "check sasl.username, sasl.password and sasl.mechanism of the profile or -X"

SILENT = logging.getLogger("kinspect.librdkafka")
SILENT.addHandler(logging.NullHandler())
SILENT.propagate = False


def auth_reason(error: KafkaError) -> str:
    """librdkafka's reason without the broker prefix and the state timing, e.g.
    "SASL authentication error: Authentication failed: Invalid username or password"."""
    text = error.str()
    head, sep, rest = text.partition(": ")
    if sep and "://" in head:  # "sasl_plaintext://host:port/bootstrap: SASL authentication…"
        text = rest
    cut = text.rfind(" (after ")
    return text[:cut] if cut > 0 and text.endswith(")") else text


def auth_message(bootstrap: str, reason: str) -> str:
    return f"{AUTH_FAILED} at {bootstrap}: {reason} ({AUTH_HINT})"


def is_auth_message(text: str | None) -> bool:
    return bool(text) and str(text).startswith(AUTH_FAILED)


class AuthWatch:
    """The error_cb of one client: remembers the last authentication failure."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._reason: str | None = None
        self._lock = threading.Lock()

    def __call__(self, error: KafkaError) -> None:
        if error.code() == KafkaError._AUTHENTICATION:
            with self._lock:
                self._reason = auth_reason(error)

    def failure(self, client: Any = None) -> str | None:
        """The one line if the login was refused (serving the client's callbacks first)."""
        if client is not None:
            client.poll(0)
        with self._lock:
            reason = self._reason
        return auth_message(self.bootstrap, reason) if reason is not None else None

    def clear(self, client: Any = None) -> None:
        """Forget what was recorded (serving the client's queued callbacks first)."""
        if client is not None:
            client.poll(0)
        with self._lock:
            self._reason = None

    def check(self, client: Any = None) -> None:
        """Raise KinspectError with the one line if the login was refused."""
        message = self.failure(client)
        if message is not None:
            raise KinspectError(message)


def client_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], AuthWatch]:
    """The config (already merged by the caller, bootstrap.servers included) with a silent
    logger and an error_cb that records a refused login; and that record."""
    watch = AuthWatch(str(config.get("bootstrap.servers", "")))
    return {**config, "logger": SILENT, "error_cb": watch}, watch


def list_topics(client: Any, watch: AuthWatch, timeout_s: float, topic: str | None = None) -> Any:
    """client.list_topics, asked in growing steps (1, 2, 4 s…) so a refused login ends it
    within a second: raises KinspectError for the refusal, else KafkaException as list_topics
    does. (Not for a Consumer with an assignment: checking polls the client.)"""
    deadline = time.monotonic() + timeout_s
    step = 1.0
    while True:
        try:
            return client.list_topics(topic=topic,
                                      timeout=max(0.1, min(step, deadline - time.monotonic())))
        except KafkaException:
            watch.check(client)
            if time.monotonic() >= deadline:
                raise
        step *= 2


def quiet_admin(bootstrap: str, **settings: Any) -> AdminClient:
    """An AdminClient whose connection churn stays out of the terminal."""
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": SILENT, **settings}
    return AdminClient(config)
