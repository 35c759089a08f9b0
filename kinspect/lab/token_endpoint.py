"""The lab's token endpoint: `python -m kinspect.lab.token_endpoint --dir D --lab-id ID`.

An OAuth 2.0 client credentials grant (RFC 6749 §4.4) for the lab's one client, signing RS256
JWTs with the lab's key (lab/oauth.py) as an identity provider would: `sub` is the client id,
`aud` and `iss` what the brokers expect, an hour's lifetime. It listens on loopback on a port
the kernel picks and writes it to D/port once it serves. A wrong secret is HTTP 401
`invalid_client`, as RFC 6749 says; nothing it answers is logged.
"""

from __future__ import annotations

import argparse
import base64
import hmac
import json
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

LIFETIME_S = 3600


class Issuer:
    """The key and the one client it issues tokens to."""

    def __init__(self, directory: Path) -> None:
        from kinspect.lab.oauth import AUDIENCE, CLIENT_ID, ISSUER, KEY_ID

        self.key = (directory / "key.pem").read_bytes()
        self.secret = (directory / "client-secret").read_text().strip()
        self.client_id, self.audience, self.issuer, self.key_id = CLIENT_ID, AUDIENCE, ISSUER, KEY_ID

    def login(self, authorization: str | None, form: dict[str, str]) -> bool:
        """The client's id and secret, from HTTP basic auth or the form (both are allowed)."""
        client, secret = form.get("client_id", ""), form.get("client_secret", "")
        if authorization and authorization.lower().startswith("basic "):
            decoded = base64.b64decode(authorization[6:]).decode(errors="replace")
            client, _, secret = decoded.partition(":")
            client, secret = urllib.parse.unquote(client), urllib.parse.unquote(secret)
        return client == self.client_id and hmac.compare_digest(secret, self.secret)

    def token(self, scope: str | None) -> JsonObject:
        import jwt

        now = int(time.time())
        claims: JsonObject = {"sub": self.client_id, "iss": self.issuer, "aud": self.audience,
                                  "iat": now, "exp": now + LIFETIME_S}
        if scope:
            claims["scope"] = scope
        signed = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.key_id})
        return {"access_token": signed, "token_type": "Bearer", "expires_in": LIFETIME_S}


def handler(issuer: Issuer) -> type[BaseHTTPRequestHandler]:
    class Token(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
            if self.path.split("?")[0] != "/token":
                return self._send(404, {"error": "not_found"})
            if form.get("grant_type") != "client_credentials":
                return self._send(400, {"error": "unsupported_grant_type"})
            if not issuer.login(self.headers.get("Authorization"), form):
                return self._send(401, {"error": "invalid_client"})
            return self._send(200, issuer.token(form.get("scope")))

        def _send(self, status: int, body: JsonObject) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: a request line is no one's business."""

    return Token


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--lab-id", required=True, help="tags the process as this lab's")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(Issuer(args.dir)))
    ready = args.dir / "port.new"
    ready.write_text(str(server.server_address[1]))
    ready.rename(args.dir / "port")  # whole or absent for the lab reading it
    server.serve_forever()


if __name__ == "__main__":
    main()
