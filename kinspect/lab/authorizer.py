"""Least privilege in the lab: Kafka's ACL authorizer, and users with few rights.

On-call users are often allowed little more than Describe; to test kinspect's verdicts with
such a user for real, `lab up --authorizer` turns Kafka's own authorizer on (AclAuthorizer in
ZooKeeper mode, StandardAuthorizer in KRaft) with nothing allowed where no ACL says so. The
PLAINTEXT listener's User:ANONYMOUS (inter-broker traffic, the lab's own tools) and the lab's
user kinspect are super users. `lab user add NAME --allow OPERATION:TYPE[:NAME]` makes a
SCRAM-SHA-256 user with a random password (LAB_DIR/users/NAME.password, mode 600, never
printed) and exactly those ACLs, through Kafka's AdminClient on the PLAINTEXT listener, so
Kafka's own `kafka-acls --list` shows them.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinspect.errors import KinspectError
from kinspect.lab import sasl, tls
from kinspect.lab.state import LabState

if TYPE_CHECKING:
    from kinspect.model.events import JsonObject

ZOOKEEPER_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
KRAFT_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SUPER_USERS = ("User:ANONYMOUS", f"User:{sasl.USERNAME}")
OPERATIONS = ("all", "read", "write", "create", "delete", "alter", "describe", "cluster_action",
              "describe_configs", "alter_configs", "idempotent_write")
TYPES = ("cluster", "topic", "group")
CLUSTER_NAME = "kafka-cluster"  # the one name a cluster resource has
USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
ALLOW_FORM = "OPERATION:TYPE[:NAME]"


@dataclass(frozen=True)
class Grant:
    """One ALLOW ACL asked for: an operation on a resource (a literal name or a prefix)."""

    operation: str  # one of OPERATIONS
    resource_type: str  # one of TYPES
    name: str  # "*" for all, a prefix (without its "*") when pattern is PREFIXED
    pattern: str = "LITERAL"  # or "PREFIXED"

    @property
    def words(self) -> str:
        name = f"{self.name}*" if self.pattern == "PREFIXED" else self.name
        return f"{self.operation}:{self.resource_type}:{name}"


@dataclass(frozen=True)
class LabUser:
    """A user `lab user add` made: its grants as asked, and where its password is kept."""

    name: str
    password_file: str
    grants: tuple[Grant, ...]


def parse_grant(text: str) -> Grant:
    """OPERATION:TYPE[:NAME] (e.g. describe:topic, read:topic:orders, read:group:app-*)."""
    parts = text.strip().split(":", 2)
    if len(parts) < 2 or not all(parts):
        raise KinspectError(f"--allow {text!r}: expected {ALLOW_FORM}, e.g. describe:topic or "
                            "read:topic:orders")
    operation, kind = parts[0].lower().replace("-", "_"), parts[1].lower()
    name = parts[2] if len(parts) == 3 else "*"
    if operation not in OPERATIONS:
        raise KinspectError(f"--allow {text!r}: unknown operation {parts[0]!r} (one of "
                            f"{', '.join(OPERATIONS)})")
    if kind not in TYPES:
        raise KinspectError(f"--allow {text!r}: unknown resource type {parts[1]!r} (one of "
                            f"{', '.join(TYPES)})")
    if kind == "cluster":
        if name not in ("*", CLUSTER_NAME):
            raise KinspectError(f"--allow {text!r}: a cluster has no name but {CLUSTER_NAME}")
        return Grant(operation, kind, CLUSTER_NAME)
    if name != "*" and name.endswith("*"):
        if "*" in name[:-1]:
            raise KinspectError(f"--allow {text!r}: '*' only at the end of a name (a prefix)")
        return Grant(operation, kind, name[:-1], "PREFIXED")
    if "*" in name[:-1]:
        raise KinspectError(f"--allow {text!r}: '*' only at the end of a name (a prefix)")
    return Grant(operation, kind, name)


def check_user_name(name: str) -> str:
    if not USER_NAME.fullmatch(name):
        raise KinspectError(f"user name {name!r}: letters, digits, '.', '_' and '-', "
                            "at most 64, starting with a letter or digit")
    if name in (sasl.USERNAME, "ANONYMOUS"):
        raise KinspectError(f"user {name} is the lab's own (a super user); choose another name")
    return name


def enabled(state: LabState) -> bool:
    return bool(state.extra.get("authorizer"))


def plan(root: Path, mode: str) -> JsonObject:
    """The authorizer for the state: the class this mode's Kafka has, the super users, and
    where `lab user add` keeps its users."""
    return {"class": KRAFT_AUTHORIZER if mode == "kraft" else ZOOKEEPER_AUTHORIZER,
            "super_users": list(SUPER_USERS), "users_dir": str(users_dir(root))}


def broker_settings(state: LabState) -> dict[str, str]:
    """The authorizer's settings (KRaft: controllers too, as they answer CreateAcls)."""
    info = state.extra.get("authorizer")
    if not info:
        return {}
    return {"authorizer.class.name": info["class"],
            "allow.everyone.if.no.acl.found": "false",
            "super.users": ";".join(info["super_users"])}


def users_dir(root: Path) -> Path:
    return root / "users"


def clear_users(root: Path) -> None:
    """A new lab starts with no user of an earlier one."""
    shutil.rmtree(users_dir(root), ignore_errors=True)


def require_secure(state: LabState) -> None:
    if "sasl" not in state.extra:
        raise KinspectError("lab users log in with SASL: start the lab with --sasl or --tls "
                            "(e.g. kinspect lab reset --tls --authorizer)")


def _record_file(root: Path, name: str) -> Path:
    return users_dir(root) / f"{name}.json"


def password_file(root: Path, name: str) -> Path:
    return users_dir(root) / f"{name}.password"


def load_users(directory: Path) -> list[LabUser]:
    """The users `lab user add` made, from their records in `directory` (LAB_DIR/users)."""
    out = []
    for path in sorted(directory.glob("*.json")):
        raw = json.loads(path.read_text())
        out.append(LabUser(raw["name"], raw["password_file"],
                           tuple(Grant(**g) for g in raw["grants"])))
    return out


def add_user(root: Path, state: LabState, name: str, grants: list[Grant]) -> LabUser:
    """The SCRAM credential, then the ACLs; a user of that name is replaced."""
    require_secure(state)
    check_user_name(name)
    directory = users_dir(root)
    directory.mkdir(parents=True, exist_ok=True)
    path = password_file(root, name)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_urlsafe(18))
    _upsert_scram(state, name, path.read_text().strip())
    if _record_file(root, name).exists():
        _delete_acls(state, name)
    if grants:
        _create_acls(state, name, grants)
    user = LabUser(name, str(path), tuple(grants))
    _record_file(root, name).write_text(json.dumps(asdict(user)) + "\n")
    return user


def remove_user(root: Path, state: LabState, name: str) -> None:
    """Its ACLs and its SCRAM credential go, then its files."""
    require_secure(state)
    if not _record_file(root, name).exists():
        known = ", ".join(u.name for u in load_users(users_dir(root))) or "none"
        raise KinspectError(f"no lab user {name!r} (users: {known})")
    _delete_acls(state, name)
    _delete_scram(state, name)
    _record_file(root, name).unlink(missing_ok=True)
    password_file(root, name).unlink(missing_ok=True)


def _admin(state: LabState) -> Any:
    from kinspect.clients.kafka import quiet_admin

    return quiet_admin(state.bootstrap)  # PLAINTEXT: User:ANONYMOUS, a super user


def _wait_all(futures: Any, what: str, timeout_s: float = 30.0) -> list[Any]:
    from confluent_kafka import KafkaException

    values = futures.values() if isinstance(futures, dict) else [futures]
    try:
        return [future.result(timeout=timeout_s) for future in values]
    except KafkaException as exc:
        raise KinspectError(f"{what}: {exc.args[0].str()}") from None


def _upsert_scram(state: LabState, name: str, password: str) -> None:
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    upsert = UserScramCredentialUpsertion(
        name, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), password.encode())
    admin = _admin(state)
    _wait_all(admin.alter_user_scram_credentials([upsert], request_timeout=20),
              f"could not create the SCRAM user {name}")


def _delete_scram(state: LabState, name: str) -> None:
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        ScramMechanism,
        UserScramCredentialDeletion,
    )

    admin = _admin(state)
    _wait_all(admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion(name, ScramMechanism.SCRAM_SHA_256)], request_timeout=20),
        f"could not delete the SCRAM user {name}")


def acl_bindings(name: str, grants: list[Grant]) -> list[Any]:
    """confluent-kafka's AclBinding of each grant: ALLOW, from any host."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    kinds = {"cluster": ResourceType.BROKER, "topic": ResourceType.TOPIC,
             "group": ResourceType.GROUP}
    return [AclBinding(kinds[g.resource_type], g.name, ResourcePatternType[g.pattern],
                       f"User:{name}", "*", AclOperation[g.operation.upper()],
                       AclPermissionType.ALLOW) for g in grants]


def _create_acls(state: LabState, name: str, grants: list[Grant]) -> None:
    admin = _admin(state)
    deadline = time.monotonic() + 30
    while True:  # right after the lab is up, a KRaft controller may not answer yet
        try:
            _wait_all(admin.create_acls(acl_bindings(name, grants), request_timeout=20),
                      f"could not create the ACLs of {name}")
            return
        except KinspectError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def _principal_filter(name: str) -> Any:
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    anything: Any = None  # a filter's None matches every name and host
    return AclBindingFilter(ResourceType.ANY, anything, ResourcePatternType.ANY, f"User:{name}",
                            anything, AclOperation.ANY, AclPermissionType.ANY)


def _delete_acls(state: LabState, name: str) -> None:
    admin = _admin(state)
    _wait_all(admin.delete_acls([_principal_filter(name)], request_timeout=20),
              f"could not delete the ACLs of {name}")


def describe_acls(state: LabState, name: str) -> list[str]:
    """The user's ACLs as Kafka holds them, one short line each (operation:type:name)."""
    admin = _admin(state)
    found = _wait_all(admin.describe_acls(_principal_filter(name), request_timeout=20),
                      f"could not list the ACLs of {name}")[0]
    kinds = {"BROKER": "cluster", "TOPIC": "topic", "GROUP": "group"}
    lines = []
    for binding in found:
        rest = "*" if binding.resource_pattern_type.name == "PREFIXED" else ""
        lines.append(f"{binding.operation.name.lower()}:"
                     f"{kinds.get(binding.restype.name, binding.restype.name.lower())}:"
                     f"{binding.name}{rest}")
    return sorted(lines)


@dataclass(frozen=True)
class ClientSettings:
    """How a lab user reaches the lab: the bootstrap and a profile's librdkafka settings."""

    bootstrap: str | None  # None: the lab has no such listener
    kafka: Mapping[str, str]

    def to_json(self) -> JsonObject:
        return {"bootstrap": self.bootstrap, "kafka": dict(self.kafka)}


def client_settings(state: LabState, user: LabUser) -> ClientSettings:
    """How this user reaches the lab: the bootstrap and the librdkafka settings of a profile
    (the password as a ${file:} reference: a profile or a run dir never holds it)."""
    secure = tls.enabled(state)
    kafka = {"security.protocol": "SASL_SSL" if secure else "SASL_PLAINTEXT",
             "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user.name,
             "sasl.password": f"${{file:{user.password_file}}}"}
    if not secure:
        return ClientSettings(sasl.bootstrap(state), kafka)
    kafka["ssl.ca.location"] = str(tls.ca_file(state))
    return ClientSettings(tls.sasl_ssl_bootstrap(state), kafka)


def profile_toml(state: LabState, user: LabUser) -> str:
    """A profile for config.toml, ready to paste: [clusters.lab-NAME]. No ZooKeeper: the
    lab's ZooKeeper has no ACLs, and a user of few rights sees what the brokers allow."""
    settings = client_settings(state, user)
    lines = [f"[clusters.lab-{user.name}]", f'bootstrap = "{settings.bootstrap}"',
             "", f"[clusters.lab-{user.name}.kafka]"]
    lines += [f'"{key}" = "{value}"' for key, value in settings.kafka.items()]
    return "\n".join(lines) + "\n"
