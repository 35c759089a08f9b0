"""`answer_of`: an AdminClient future's answer, given up on as soon as the login or the TLS
handshake is refused (librdkafka would retry the handshake until the request's own timeout).
A real AdminClient aimed at a port nothing listens on; the refusal is handed to its watch as
librdkafka's error_cb hands it."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError

from kinspect.clients.kafka import WatchedAdmin, admin_client, answer_of

DEADLINE_S = 30.0  # far past when a refusal is noticed (the futures below never resolve)


@pytest.fixture
def admin() -> Iterator[WatchedAdmin]:
    with socket.socket() as s:  # a free port on loopback, closed again: nothing answers there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    yield admin_client(f"127.0.0.1:{port}", 1.0)


def test_an_answer_is_returned(admin: WatchedAdmin) -> None:
    future: Future[str] = Future()
    future.set_result("cluster-id")
    assert answer_of(admin, future, DEADLINE_S) == "cluster-id"


def test_no_answer_is_a_timeout_at_the_deadline(admin: WatchedAdmin) -> None:
    with pytest.raises(TimeoutError):
        answer_of(admin, Future(), 0.3)


def test_a_refused_handshake_ends_the_wait_before_the_deadline(admin: WatchedAdmin) -> None:
    admin.auth(KafkaError(KafkaError._SSL, "ssl://127.0.0.1:1/bootstrap: SSL handshake failed: "
                                           "certificate verify failed"))
    future: Future[str] = Future()
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        answer_of(admin, future, DEADLINE_S)
    assert time.monotonic() - started < DEADLINE_S and not future.done()
    assert admin.auth.failure() is not None  # still told to whoever asks next
