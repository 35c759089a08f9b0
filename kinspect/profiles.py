"""Named clusters from ~/.config/kinspect/config.toml, with secrets that are never shown.

A value may be written as `${env:NAME}` or `${file:/path}` so the file itself holds no secret.
Every value of a secret key (passwords, JAAS configs, ZooKeeper credentials) is registered with
`redact`, which the CLI and the TUI pass all text through before it reaches a person.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinspect.errors import KinspectError
from kinspect.validation import host_ports

SECRET_KEY = re.compile(r"password|secret|jaas|credential|token|key\.pem|private", re.I)
_REFERENCE = re.compile(r"^\$\{(env|file):([^}]+)\}$")
_SECRETS: set[str] = set()
_REFERENCES: dict[str, str] = {}  # a value read through ${env:…}/${file:…} → that reference
MASK = "***"


def config_path() -> Path:
    """$KINSPECT_CONFIG, else $XDG_CONFIG_HOME/kinspect/config.toml, else ~/.config/…"""
    if os.environ.get("KINSPECT_CONFIG"):
        return Path(os.environ["KINSPECT_CONFIG"])
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "kinspect" / "config.toml"


def remember_secret(value: str) -> None:
    if len(value) >= 3:  # masking "a" everywhere would garble all text
        _SECRETS.add(value)


def is_secret(key: str, value: str) -> bool:
    """A secret key, or a value that holds a known secret (what `redact` would mask)."""
    return bool(SECRET_KEY.search(key)) or redact(value) != value


def reference_of(value: str) -> str | None:
    """The `${env:…}` or `${file:…}` this value was read through, if any: what may be kept on
    disk instead of the value."""
    return _REFERENCES.get(value)


def resolve_reference(value: str, key: str, where: str) -> str:
    """A `${env:NAME}` or `${file:/path}` value read now (remembered as a secret); any other
    value as it is."""
    return _resolve(value, key, where)


def redact(text: str) -> str:
    """The text with every known secret value replaced by ***."""
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


@dataclass(frozen=True)
class Profile:
    name: str
    bootstrap: str
    zookeeper: str | None = None
    kafka: dict[str, str] = field(default_factory=dict)  # librdkafka properties
    zookeeper_auth: tuple[tuple[str, str], ...] = ()  # (scheme, credential), e.g. digest
    refresh_s: float = 1.0


def _resolve(value: Any, key: str, where: str) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    match = _REFERENCE.match(text)
    if match:
        kind, ref = match.groups()
        if kind == "env":
            if ref not in os.environ:
                raise KinspectError(f"{where}: {key} names ${{env:{ref}}}, which is not set")
            text = os.environ[ref]
        else:
            try:
                text = Path(ref).expanduser().read_text().strip()
            except (OSError, UnicodeDecodeError) as exc:
                raise KinspectError(f"{where}: {key} names a file that cannot be read: "
                                    f"{getattr(exc, 'strerror', None) or 'not text'}") from None
    if SECRET_KEY.search(key) or match:
        remember_secret(text)
    if match:
        _REFERENCES.setdefault(text, match.group(0))
    return text


_PROFILE_KEYS = ("bootstrap", "zookeeper", "kafka", "zookeeper_auth", "refresh_s")


def _profile(name: str, raw: Any, path: Path) -> Profile:
    where = f"{path}: [clusters.{name}]"
    if not isinstance(raw, dict):
        raise KinspectError(f"{where} must be a table")
    unknown = set(raw) - set(_PROFILE_KEYS)
    if unknown:
        raise KinspectError(f"{where}: unknown key {sorted(unknown)[0]!r} (allowed: "
                            f"{', '.join(_PROFILE_KEYS)})")
    bootstrap = _bootstrap(raw.get("bootstrap"), where)
    zookeeper = _zookeeper(raw.get("zookeeper"), where)
    kafka = raw.get("kafka", {})
    if not isinstance(kafka, dict):
        raise KinspectError(f"{where}: kafka must be a table of librdkafka properties")
    zk_auth = _zookeeper_auth(raw.get("zookeeper_auth"), where)
    refresh = raw.get("refresh_s", 1.0)
    if not isinstance(refresh, int | float) or not 0.2 <= refresh <= 300:
        raise KinspectError(f"{where}: refresh_s must be between 0.2 and 300 seconds")
    return Profile(name=name, bootstrap=bootstrap, zookeeper=zookeeper,
                   kafka={str(k): _resolve(v, str(k), where) for k, v in kafka.items()},
                   zookeeper_auth=zk_auth, refresh_s=float(refresh))


def _bootstrap(bootstrap: Any, where: str) -> str:
    """The profile's bootstrap servers, required and each a host:port."""
    if not isinstance(bootstrap, str) or not bootstrap.strip():
        raise KinspectError(f"{where}: bootstrap is required, e.g. \"broker1:9092,broker2:9092\"")
    return host_ports(bootstrap, f"{where}: bootstrap")


def _zookeeper(zookeeper: Any, where: str) -> str | None:
    """The profile's ZooKeeper connect string with its chroot, if it names one."""
    if zookeeper is None:
        return None
    if not isinstance(zookeeper, str):
        raise KinspectError(f"{where}: zookeeper must be a string, e.g. \"zk1:2181/kafka\"")
    return host_ports(zookeeper, f"{where}: zookeeper", chroot_allowed=True)


def _zookeeper_auth(auth: Any, where: str) -> tuple[tuple[str, str], ...]:
    """zookeeper_auth = {scheme, credential}: the one digest kazoo logs in with (none: none)."""
    if auth is None:
        return ()
    if not isinstance(auth, dict) or "scheme" not in auth or "credential" not in auth:
        raise KinspectError(f"{where}: zookeeper_auth needs scheme and credential")
    return ((str(auth["scheme"]), _resolve(auth["credential"], "credential", where)),)


def _clusters(path: Path) -> dict[str, Any]:
    """The [clusters.*] tables of the profiles file, or a one-line reason it cannot be read."""
    import tomllib  # here: ~10 ms that a command given --bootstrap never spends

    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise KinspectError(f"no config file at {path} (profiles live there; see "
                            "docs/guides/on-call.md#profiles)") from None
    except OSError as exc:
        raise KinspectError(f"cannot read {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise KinspectError(f"{path}: not valid TOML: {exc}") from None
    clusters = data.get("clusters", {})
    if not isinstance(clusters, dict):
        raise KinspectError(f"{path}: [clusters] must be tables, e.g. [clusters.prod]")
    return clusters


def profile_names(path: Path | None = None) -> list[str]:
    """Every profile's name, in the file's order."""
    return list(_clusters(path or config_path()))


def load_profile(name: str, path: Path | None = None) -> Profile:
    path = path or config_path()
    clusters = _clusters(path)
    if name not in clusters:
        known = ", ".join(sorted(clusters))
        raise KinspectError(f"no profile {name!r} in {path}" + (f" (profiles: {known})"
                                                                  if known else ""))
    return _profile(name, clusters[name], path)
