"""OAUTHBEARER tokens for the per-broker probes, got as librdkafka gets them for the AdminClient.

The probes speak through kafka-python, which takes a token provider and nothing else; this one
reads the same librdkafka settings a profile gives the main client, so one profile logs both in:

- `sasl.oauthbearer.method=oidc`: the OAuth 2.0 client credentials grant against
  `sasl.oauthbearer.token.endpoint.url` (client id and secret as HTTP basic auth, the optional
  `sasl.oauthbearer.scope`), as librdkafka does; the token is kept until 80% of its lifetime.
- the default method: librdkafka's unsecured JWT from `sasl.oauthbearer.config`
  (`principal=… scope=… lifeSeconds=…`), which only a broker with Kafka's unsecured validator
  takes (development clusters).

`sasl.oauthbearer.extensions` (`key=value,…`) are sent with either. A token never leaves this
module but to the broker: errors say the endpoint and the HTTP status, not the answer.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafka.errors import KafkaError
from kafka.sasl.oauth import AbstractTokenProvider

from kinspect.errors import KinspectError

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

REFRESH_AT = 0.8  # of a token's lifetime, as librdkafka's refresh
DEFAULT_LIFE_S = 3600  # librdkafka's lifeSeconds default for unsecured tokens
OAUTH_KEYS = ("sasl.oauthbearer.method", "sasl.oauthbearer.token.endpoint.url",
             "sasl.oauthbearer.client.id", "sasl.oauthbearer.client.secret",
             "sasl.oauthbearer.scope", "sasl.oauthbearer.extensions", "sasl.oauthbearer.config",
             "https.ca.location")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _pairs(text: str, separator: str) -> dict[str, str]:
    pairs = (item.partition("=") for item in text.split(separator) if item.strip())
    return {key.strip(): value.strip() for key, _, value in pairs}


class LibrdkafkaTokens(AbstractTokenProvider):  # type: ignore[misc]
    """A token provider for kafka-python made from a profile's librdkafka settings."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__()
        self._config = {key: str(value) for key, value in config.items() if key in OAUTH_KEYS}
        self._lock = threading.Lock()
        self._token: str | None = None
        self._refresh_at = 0.0
        method = self._config.get("sasl.oauthbearer.method", "default").lower()
        if method not in ("oidc", "default"):
            raise KinspectError(f"asking brokers directly: sasl.oauthbearer.method {method} is "
                                "not supported (oidc or default)")
        if method == "oidc":
            missing = [k for k in ("sasl.oauthbearer.token.endpoint.url",
                                   "sasl.oauthbearer.client.id") if k not in self._config]
            if missing:
                raise KinspectError(f"sasl.oauthbearer.method=oidc needs {', '.join(missing)}")
        self.oidc = method == "oidc"

    def token(self) -> str:
        with self._lock:
            if self._token is None or time.time() >= self._refresh_at:
                token, life_s = self._fetch() if self.oidc else self._unsecured()
                self._token, self._refresh_at = token, time.time() + life_s * REFRESH_AT
            return self._token

    def extensions(self) -> dict[str, str]:
        return _pairs(self._config.get("sasl.oauthbearer.extensions", ""), ",")

    def _unsecured(self) -> tuple[str, float]:
        """librdkafka's default: an unsigned JWT naming the principal (alg "none")."""
        options = _pairs(self._config.get("sasl.oauthbearer.config", ""), " ")
        if "principal" not in options:
            raise KafkaError("sasl.oauthbearer.config names no principal= (librdkafka's "
                             "unsecured tokens need one)")
        life = float(options.get("lifeSeconds", DEFAULT_LIFE_S))
        now = int(time.time())
        claims: JsonObject = {"sub": options["principal"], "iat": now, "exp": now + int(life)}
        if "scope" in options:
            claims["scope"] = options["scope"].split(",")
        header = _b64(json.dumps({"alg": "none"}).encode())
        return f"{header}.{_b64(json.dumps(claims).encode())}.", life

    def _fetch(self) -> tuple[str, float]:
        """The client credentials grant, as librdkafka sends it (urllib.request imported here:
        14 ms of every one-shot command's start, for OAUTHBEARER profiles only)."""
        import urllib.error
        import urllib.parse
        import urllib.request

        url = self._config["sasl.oauthbearer.token.endpoint.url"]
        form = {"grant_type": "client_credentials"}
        if scope := self._config.get("sasl.oauthbearer.scope"):
            form["scope"] = scope
        login = (f"{self._config['sasl.oauthbearer.client.id']}:"
                 f"{self._config.get('sasl.oauthbearer.client.secret', '')}")
        request = urllib.request.Request(
            url, data=urllib.parse.urlencode(form).encode(), method="POST",
            headers={"Authorization": f"Basic {base64.b64encode(login.encode()).decode()}",
                     "Content-Type": "application/x-www-form-urlencoded",
                     "Accept": "application/json"})
        context = ssl.create_default_context(cafile=self._config.get("https.ca.location"))
        try:
            with urllib.request.urlopen(request, timeout=10, context=context) as answer:
                body = json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            raise KafkaError(f"the token endpoint {url} refused the client credentials "
                             f"(HTTP {exc.code})") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise KafkaError(f"no token from {url}: {getattr(exc, 'reason', exc)}") from None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str):
            raise KafkaError(f"the token endpoint {url} answered without an access_token")
        return token, _lifetime(body, token)


def _lifetime(body: Mapping[str, Any], token: str) -> float:
    """expires_in when the endpoint says it, else the token's own exp claim, else a minute."""
    if isinstance(body.get("expires_in"), int | float):
        return float(body["expires_in"])
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return max(1.0, float(claims["exp"]) - time.time())
    except (IndexError, ValueError, KeyError, TypeError):
        return 60.0
