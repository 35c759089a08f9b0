"""librdkafka clients that keep quiet and say, in one line, when the login or TLS was refused.

A refused SASL login reaches librdkafka's `error_cb` as KafkaError._AUTHENTICATION, a second
after connecting; the call that was waiting (list_topics, a delivery) only times out later as
"Broker transport failure", and meanwhile librdkafka logs a FAIL line per broker per retry.
`client_config` gives a client a silent logger and an error_cb that remembers the refusal;
`AuthWatch.check` turns it into the one line users see (a KinspectError, exit 2).

Callbacks run only inside poll()/flush()/consume(): `check` polls the client first, and
`list_topics` asks in short steps, so a refusal is said within a second instead of after the
whole timeout. `quiet_admin` is the AdminClient the lab's own tools use (no error_cb: they
talk PLAINTEXT to the lab).

A failed TLS handshake takes the same path: librdkafka reports it to error_cb as
KafkaError._SSL ("certificate verify failed", whatever the cause); the watch asks the broker
once more with Python's ssl to say which cause (an unknown CA, a certificate that does not name
the address) and which setting to check. A client speaking the wrong protocol to a listener
gets no error at all, only FAIL lines in the log ("Disconnected ... in state
APIVERSION_QUERY" for plaintext on a TLS port, "connecting to a PLAINTEXT broker listener?" the
other way round): clients made by `client_config` record those from their own logger, and
when every try ends so (not one broker restarting), say it as the likely cause.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from kinspect.errors import KinspectError

T = TypeVar("T")
AUTH_FAILED: Final = "authentication failed"
AUTH_HINT = "check sasl.username, sasl.password and sasl.mechanism of the profile or -X"
TLS_FAILED = "TLS handshake failed"
TLS_STATE: Final = "TLS failed"  # the AdminClient's state (the header's "admin TLS failed")
PROTOCOL_MISMATCH = "wrong security.protocol"
PROTOCOL_TRIES = 3  # a listener that closed this many connections at once is the wrong one
_ADDRESS = re.compile(r"^(?:[a-z_]+://)?(?P<address>[^/ ]+:\d+)(?:/\S*)?: ")
_VERIFY = "certificate verify failed"

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
    """A refused login, or a refused TLS handshake or protocol: said once, exit 2."""
    return bool(text) and str(text).startswith((AUTH_FAILED, TLS_FAILED, PROTOCOL_MISMATCH))


def is_tls_message(text: str | None) -> bool:
    return bool(text) and str(text).startswith((TLS_FAILED, PROTOCOL_MISMATCH))


def failed_address(text: str, fallback: str) -> str:
    """host:port of the broker librdkafka's line is about ("ssl://h:p/bootstrap: ...")."""
    found = _ADDRESS.match(text)
    return found.group("address") if found else fallback


def tls_reason(error_text: str) -> str:
    """librdkafka's handshake failure without its prefix, OpenSSL's code and its own advice:
    "certificate verify failed" rather than "SSL handshake failed: error:0A000086:SSL…"."""
    text = error_text.split(": ", 1)[1] if _ADDRESS.match(error_text) else error_text
    text = text.removeprefix("SSL handshake failed: ")
    cut = text.rfind(" (after ")
    text = text[:cut] if cut > 0 and text.endswith(")") else text
    if _VERIFY in text:
        return _VERIFY
    return re.sub(r"error:[0-9A-F]+:SSL routines:[^:]*:", "", text).strip()


def verify_detail(address: str, config: Mapping[str, Any], timeout_s: float = 2.0
                  ) -> str | None:
    """Why this broker's certificate does not verify with the client's settings, as OpenSSL
    says it ("unable to get local issuer certificate", "Hostname mismatch, ..."): asked with
    Python's ssl, since librdkafka only says "certificate verify failed"."""
    host, _, port = address.rpartition(":")
    try:
        context = ssl.create_default_context(cafile=config.get("ssl.ca.location") or None)
        context.check_hostname = str(config.get("ssl.endpoint.identification.algorithm",
                                                "https")).lower() == "https"
        with socket.create_connection((host, int(port)), timeout=timeout_s) as raw, \
                context.wrap_socket(raw, server_hostname=host):
            return None
    except ssl.SSLCertVerificationError as exc:
        return str(exc.verify_message or exc.reason or exc)
    except (OSError, ValueError):
        return None


def tls_message(address: str, reason: str, config: Mapping[str, Any] | None) -> str:
    """The one line of a refused TLS handshake: the reason and the setting to check (config
    None: the client's settings are not known here, so the cause is not probed)."""
    if _VERIFY not in reason:
        return f"{TLS_FAILED} at {address}: {reason} (check the ssl.* settings of the profile or -X)"
    if config is None:
        return f"{TLS_FAILED} at {address}: {reason} (check ssl.ca.location of the profile or -X)"
    detail = verify_detail(address, config)
    return (f"{TLS_FAILED} at {address}: {reason}{f': {detail}' if detail else ''} "
            f"({verify_hint(detail, config.get('ssl.ca.location'))})")


def verify_hint(detail: str | None, ca: str | None) -> str:
    """What to check when a broker's certificate did not verify, from OpenSSL's reason."""
    if detail and "mismatch" in detail.lower():  # hostname or IP address
        return ("the broker's certificate does not name the address connected to: check the "
                "bootstrap address and the certificate's names (ssl.endpoint.identification"
                ".algorithm=none turns the check off)")
    if ca:
        return (f"check ssl.ca.location ({ca}) of the profile or -X: it must hold the CA that "
                "signed the broker's certificate")
    return ("check ssl.ca.location of the profile or -X: none is set, and the system's CAs do "
            "not trust the broker's certificate")


def protocol_message(address: str, tls_expected: bool) -> str:
    """The one line of a listener that speaks another protocol than the client."""
    if tls_expected:
        return (f"{PROTOCOL_MISMATCH} at {address}: the broker closed every connection at the "
                "first request, as a TLS listener does to a plaintext client (check "
                "security.protocol of the profile or -X: SSL or SASL_SSL, with ssl.ca.location)")
    return (f"{PROTOCOL_MISMATCH} at {address}: the broker closed every TLS handshake, as a "
            "plaintext listener does (check security.protocol of the profile or -X: PLAINTEXT "
            "or SASL_PLAINTEXT, or the listener's port)")


class AuthWatch:
    """The error_cb of one client: remembers the last authentication or TLS failure, and (for
    clients made by client_config, which pass their config) the signs of a wrong protocol."""

    def __init__(self, bootstrap: str, config: Mapping[str, Any] | None = None) -> None:
        self.bootstrap = bootstrap
        self.config = dict(config) if config is not None else None
        self._reason: str | None = None
        self._tls: tuple[str, str] | None = None  # (address, reason)
        self._said: dict[tuple[str, str], str] = {}  # a TLS line, probed once
        self._mismatch: dict[tuple[str, bool], int] = {}  # (address, TLS expected) -> closes
        self._lock = threading.Lock()

    def __call__(self, error: KafkaError) -> None:
        text = error.str()
        with self._lock:
            if error.code() == KafkaError._AUTHENTICATION:
                self._reason = auth_reason(error)
            elif error.code() == KafkaError._SSL:
                self._tls = (failed_address(text, self.bootstrap), tls_reason(text))
            elif "connecting to a PLAINTEXT broker listener?" in text:
                self._count(failed_address(text, self.bootstrap), tls_expected=False)

    def log(self, line: str) -> None:
        """A librdkafka log line (FAIL ...): a plaintext client closed at ApiVersion."""
        if "Disconnected" in line and "state APIVERSION_QUERY" in line:
            text = line.split("]: ", 1)[-1]
            with self._lock:
                self._count(failed_address(text, self.bootstrap), tls_expected=True)

    def _count(self, address: str, tls_expected: bool) -> None:
        key = (address, tls_expected)
        self._mismatch[key] = self._mismatch.get(key, 0) + 1

    def failure(self, client: Any = None) -> str | None:
        """The one line if the login or the TLS handshake was refused, or every connection
        ended as a wrong protocol ends (serving the client's callbacks first)."""
        if client is not None:
            client.poll(0)
        with self._lock:
            reason, tls, mismatch = self._reason, self._tls, dict(self._mismatch)
        if reason is not None:
            return auth_message(self.bootstrap, reason)
        if tls is not None:
            if tls not in self._said:  # probing costs a handshake: once per cause
                self._said[tls] = tls_message(*tls, self.config)
            return self._said[tls]
        closes = sum(mismatch.values())
        if closes >= PROTOCOL_TRIES:
            address, tls_expected = max(mismatch, key=lambda k: mismatch[k])
            return protocol_message(address, tls_expected)
        return None

    def clear(self, client: Any = None) -> None:
        """Forget what was recorded (serving the client's queued callbacks first)."""
        if client is not None:
            client.poll(0)
        with self._lock:
            self._reason, self._tls = None, None
            self._mismatch.clear()

    def check(self, client: Any = None) -> None:
        """Raise KinspectError with the one line if the login was refused."""
        message = self.failure(client)
        if message is not None:
            raise KinspectError(message)


class _LogWatch(logging.Handler):
    """Hands a client's librdkafka log lines to its watch, and nothing to the terminal."""

    def __init__(self, watch: AuthWatch) -> None:
        super().__init__()
        self.watch = watch

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # a log line must never break the client's thread
            self.watch.log(record.getMessage())


def client_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], AuthWatch]:
    """The config (already merged by the caller, bootstrap.servers included) with a logger of
    its own (silent; it only feeds the watch) and an error_cb that records a refused login or
    handshake; and that record."""
    watch = AuthWatch(str(config.get("bootstrap.servers", "")), config)
    logger = logging.Logger(SILENT.name)  # one per client, outside logging's registry
    logger.addHandler(_LogWatch(watch))
    logger.propagate = False
    return {**config, "logger": logger, "error_cb": watch}, watch


ADMIN_TIMEOUT_S = 3.0  # an observer's AdminClient: socket.timeout.ms and each poll's limit


@dataclass(frozen=True)
class WatchedAdmin:
    """An AdminClient with the watch of its logins (a refused one is said, not retried)."""

    client: AdminClient
    auth: AuthWatch


def admin_client(bootstrap: str, timeout_s: float = ADMIN_TIMEOUT_S,
                 config: Mapping[str, str] | None = None) -> WatchedAdmin:
    """The AdminClient a source polls with. A one-shot command makes it first
    (cli/common.resolve_with_admin): librdkafka connects on threads of its own while the
    command imports the rest, and the first metadata answer comes ~50 ms sooner."""
    settings, watch = client_config({"bootstrap.servers": bootstrap,
                                     "socket.timeout.ms": int(timeout_s * 1000),
                                     **(config or {})})
    return WatchedAdmin(AdminClient(settings), watch)


def answer_of(admin: WatchedAdmin, future: Future[T], timeout_s: float) -> T:
    """An AdminClient future's result; TimeoutError at `timeout_s`, or as soon as the login or
    the TLS handshake is refused (librdkafka would retry it until the request's own timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return future.result(timeout=max(0.0, min(0.1, deadline - time.monotonic())))
        except TimeoutError:
            if time.monotonic() >= deadline or admin.auth.failure(admin.client) is not None:
                raise


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
