"""`kinspect lab ...`: fetch, up, down, reset, status and the faults."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from kinspect.cli.common import progress
from kinspect.cli.progress import Display
from kinspect.errors import KinspectError
from kinspect.lab import BACKENDS, dist, presets, shaping
from kinspect.lab.backend import MODES, LabBackend, UpOptions, status_json
from kinspect.lab.faults import Fault, FaultKind, Scope
from kinspect.lab.journal import cut_text
from kinspect.lab.netns import can_use_netns
from kinspect.lab.shaping import Direction, LinkShape
from kinspect.lab.state import LabState
from kinspect.paths import kinspect_home
from kinspect.validation import option, writable_dir

if TYPE_CHECKING:
    from kinspect.lab.authorizer import LabUser
    from kinspect.model.events import JsonObject

T = TypeVar("T")
StatusJson = dict[str, Any]  # the lab's status as `lab status --json` writes it (status_json)


def register(commands: Any) -> None:
    lab = commands.add_parser("lab", help="start, break and tear down the local lab cluster")
    sub = lab.add_subparsers(dest="lab_command", metavar="ACTION", required=True)

    fetch = sub.add_parser("fetch", help="fetch Kafka's jars with Maven (once; cached)")
    fetch.add_argument("--force", action="store_true", help="fetch again even if cached")
    fetch.add_argument("--kafka", metavar="VERSION", default=None,
                       help="the Kafka version (default: the pinned 3.9.x; '4': the tested "
                            "4.x; any 3.9.x or 4.x release Maven resolves)")
    fetch.set_defaults(handler=cmd_fetch)

    imgs = sub.add_parser("images", help="make the docker backend's images (base and Kafka; "
                          "reused when present)")
    imgs.add_argument("--rebuild", action="store_true", help="make both again")
    imgs.add_argument("--kafka", metavar="VERSION", default=None,
                      help="the Kafka version the image runs (default: the pinned 3.9.x, also "
                           "tagged latest for docker-compose.yml; '4': the tested 4.x)")
    imgs.set_defaults(handler=cmd_images)

    up = sub.add_parser("up", help="start zk1 (or KRaft controllers ctl1..) and kafka1..N "
                        "(fetches Kafka and makes images when missing)")
    _up_arguments(up)
    up.set_defaults(handler=cmd_up)

    reset = sub.add_parser("reset", help="down, wipe data, up again")
    _up_arguments(reset)
    reset.set_defaults(handler=cmd_reset)

    down = sub.add_parser("down", help="stop everything and remove what the lab made")
    down.set_defaults(handler=cmd_down)

    status = sub.add_parser("status", help="nodes, addresses, partitions and key settings")
    status.add_argument("--json", action="store_true", help="one JSON object on stdout")
    status.set_defaults(handler=cmd_status)

    for action, text in (("kill", "kill a node at once, like a crash (SIGKILL / docker kill)"),
                         ("stop", "clean shutdown of a node"),
                         ("start", "start a stopped or killed node"),
                         ("restart", "stop then start a node (a node that is down is started)"),
                         ("pause", "freeze a node, like a long GC pause (SIGSTOP / docker pause)"),
                         ("resume", "thaw a paused node")):
        p = sub.add_parser(action, help=text)
        p.add_argument("node", help="zk1, kafka1, kafka2, ...")
        p.set_defaults(handler=cmd_fault, fault=partial(_node_fault, FaultKind(action)))

    part = sub.add_parser("partition", help="cut the network into groups (blockade semantics)",
                          description="Two nodes can talk if and only if some GROUP holds both; "
                          "nodes named in no group form one more group. Example: "
                          "'partition kafka1,kafka2,kafka3 kafka1,kafka3,zk1' cuts kafka2 from "
                          "ZooKeeper only.")
    part.add_argument("groups", nargs="+", metavar="GROUP", help="comma-separated node names")
    part.add_argument("--clients", metavar="NODE", help="clients (this host) join NODE's groups "
                      "instead of reaching everyone")
    part.set_defaults(handler=cmd_fault, fault=lambda args: Fault(
        FaultKind.PARTITION, groups=tuple(tuple(g.split(",")) for g in args.groups),
        clients_with=args.clients))

    iso = sub.add_parser("isolate", help="cut one node off (sugar for partition)")
    iso.add_argument("node")
    iso.add_argument("--from", dest="scope", default="all",
                     choices=[*(s.value for s in Scope), "controllers"],
                     help="cut it from ZooKeeper (in a KRaft lab: zk or controllers, the "
                          "controller quorum), from the other brokers, or from all")
    iso.add_argument("--clients", metavar="NODE", help="as for partition")
    iso.set_defaults(handler=cmd_fault, fault=lambda args: Fault(
        FaultKind.ISOLATE, args.node, Scope.parse(args.scope), clients_with=args.clients))

    heal = sub.add_parser("heal", help="remove all partitions")
    heal.set_defaults(handler=cmd_fault, fault=lambda args: Fault(FaultKind.HEAL))

    slow = sub.add_parser(
        "slow", help="make a node's link slow and lossy (netem, or tbf + iptables)",
        description="Shape a node's link: --rate (tbf) and --loss (iptables statistic) work "
        "on any kernel; --delay and --jitter need netem. A new shape replaces the old one. "
        "Example: 'lab slow kafka2 --rate 256kbit --loss 5'.")
    slow.add_argument("node", help="zk1, kafka1, kafka2, ...")
    slow.add_argument("--delay", type=option(1, 60_000, integer=True), default=0,
                      metavar="MS", help="added delay in ms, 1-60000 (needs netem)")
    slow.add_argument("--jitter", type=option(1, 60_000, integer=True), default=0,
                      metavar="MS", help="delay varies by this much, ms (needs netem)")
    slow.add_argument("--rate", type=_checked(shaping.parse_rate), default=0, metavar="RATE",
                      help="bandwidth: 200kbit, 1mbit, ... (tbf where netem is missing)")
    slow.add_argument("--loss", type=_checked(shaping.parse_loss), default=0.0, metavar="PCT",
                      help="random packet loss in percent (iptables statistic where netem is "
                           "missing)")
    slow.add_argument("--direction", choices=[d.value for d in Direction], default="both",
                      help="what the node receives (in), sends (out), or both (default)")
    slow.set_defaults(handler=cmd_fault, fault=_slow_fault)

    unslow = sub.add_parser("unslow", help="links back to full speed (one node, or all)")
    unslow.add_argument("node", nargs="?", help="only this node's link (default: every link)")
    unslow.set_defaults(handler=cmd_fault,
                        fault=lambda args: Fault(FaultKind.UNSLOW, args.node))

    brokers, or_all = "kafka1, kafka2, ...", "kafka1, kafka2, ... or all (every broker at once)"
    for kind, words, nodes in (
            (FaultKind.FILL_DISK, "fill a broker's last log dir (a small disk of its own, lab up "
             "--log-dirs 2) until it is full: Kafka takes the dir offline", brokers),
            (FaultKind.FREE_DISK, "delete what fill-disk wrote (Kafka uses the dir again once "
             "the broker restarts: lab restart NODE)", brokers),
            (FaultKind.POWER_OFF, "cut a broker's power (lab up --power): every write it had "
             "not fsynced is dropped and it is killed in the same instant; what was dropped is "
             "kept under the lab's power-cuts/", or_all),
            (FaultKind.POWER_ON, "power a broker on again: its disk mounted, the broker started "
             "(it recovers from an unclean shutdown)", or_all)):
        one = sub.add_parser(kind.value, help=words)
        one.add_argument("node", help=nodes)
        one.set_defaults(handler=cmd_fault, fault=lambda args, kind=kind: Fault(kind, args.node))

    _user_commands(sub)


def _user_commands(sub: Any) -> None:
    """`lab user add|list|remove`: SCRAM users with few rights (a lab with --authorizer)."""
    from kinspect.lab.authorizer import ALLOW_FORM, parse_grant

    user = sub.add_parser("user", help="lab users with few rights (SCRAM + ACLs; needs --sasl "
                          "or --tls, and --authorizer to be refused anything)")
    users = user.add_subparsers(dest="user_command", metavar="ACTION", required=True)
    add = users.add_parser("add", help="make (or remake) a SCRAM-SHA-256 user with these ACLs",
                           description="Example: kinspect lab user add oncall --allow "
                           "describe:cluster --allow describe:topic --allow read:group:app-*. "
                           "The password goes to LAB_DIR/users/NAME.password (never printed).")
    add.add_argument("name", help="the user's name")
    add.add_argument("--allow", action="append", default=[], metavar=ALLOW_FORM,
                     type=_checked(parse_grant),
                     help="an ALLOW ACL (repeatable): OPERATION (describe, describe_configs, "
                          "read, write, alter_configs, ...), TYPE cluster|topic|group, NAME "
                          "(default *; a name ending in * is a prefix)")
    add.add_argument("--json", action="store_true", help="the user as JSON")
    add.set_defaults(handler=cmd_user_add)
    listing = users.add_parser("list", help="the lab's users and their ACLs as Kafka holds them")
    listing.add_argument("--json", action="store_true", help="one JSON object on stdout")
    listing.set_defaults(handler=cmd_user_list)
    remove = users.add_parser("remove", help="delete a user's ACLs and its SCRAM credential")
    remove.add_argument("name")
    remove.set_defaults(handler=cmd_user_remove)


def _checked(parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse `type=` from a parser that raises KinspectError."""
    def convert(text: str) -> T:
        try:
            return parse(text)
        except KinspectError as exc:
            raise argparse.ArgumentTypeError(str(exc).split(" ", 1)[1]) from None

    convert.__name__ = "value"
    return convert


def _slow_fault(args: argparse.Namespace) -> Fault:
    shape = LinkShape(delay_ms=args.delay, jitter_ms=args.jitter, rate_kbit=args.rate,
                      loss_pct=args.loss, direction=Direction(args.direction))
    shape.check()
    return Fault(FaultKind.SLOW, args.node, shape=shape)


def _up_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--brokers", type=int, default=3, help="number of brokers, 1-9 (default 3)")
    p.add_argument("--preset", choices=sorted(presets.PRESETS), default="demo",
                   help="demo: 2018 timings, min.insync.replicas=2 (default); modern: 3.9 defaults")
    p.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE",
                   help="override any broker setting (repeatable)")
    p.add_argument("--mode", choices=MODES, default="zookeeper",
                   help="zookeeper: zk1 decides leaders (default); kraft: a controller quorum "
                        "does (Kafka's own Raft, as every Kafka since 4.0)")
    p.add_argument("--controllers", type=option(0, 5, integer=True), default=None, metavar="N",
                   help="KRaft: N dedicated controllers ctl1..N, 1-5 (default 1); 0: every "
                        "broker is also a controller (combined mode)")
    p.add_argument("--kafka", metavar="VERSION", default=None,
                   help="the Kafka version to run (default: the pinned 3.9.x; 4.x is KRaft "
                        "only); its jars come from Maven")
    p.add_argument("--feature", action="append", default=[], metavar="NAME=LEVEL",
                   type=_feature, help="Kafka 4.x in KRaft: a feature level the quorum is "
                   "formatted with (repeatable), e.g. eligible.leader.replicas.version=0 for a "
                   "lab without eligible leader replicas")
    p.add_argument("--log-dirs", type=option(1, 3, integer=True), default=1, metavar="N",
                   help="log dirs per broker, 1-3 (default 1); the second and third are small "
                        "disks of their own that 'lab fill-disk' fills (process backend, root)")
    p.add_argument("--power", action="store_true",
                   help="each broker's log dirs on kinspect's filesystem, which remembers what "
                        "was written since its last fsync: 'lab power-off' drops it, as a power "
                        "cut drops the page cache (FUSE; root)")
    p.add_argument("--broker-heap", metavar="SIZE", default=None,
                   help="each broker's JVM heap, e.g. 2g (default 384m: a few thousand partitions a "
                        "broker), a dedicated KRaft controller's too; for labs of tens of "
                        "thousands of partitions")
    p.add_argument("--network", choices=["auto", "netns", "loopback"], default="auto",
                   help="process backend: netns (root: real network faults) or loopback; "
                        "auto picks")
    p.add_argument("--base-port", type=option(1024, 64_500, integer=True), default=39090,
                   help="first port in loopback mode, 1024-64500 (default 39090)")
    p.add_argument("--backend", choices=BACKENDS, default="auto",
                   help="process: JVMs in network namespaces; docker: containers (Docker SDK); "
                        "auto (default): docker when an engine answers, else process")
    p.add_argument("--timeout", type=option(1, 3600), default=None,
                   help="seconds to wait for the cluster, 1 to 3600 (default 120, and 15 more "
                   "for each broker past three)")
    p.add_argument("--json", action="store_true", help="print the status as JSON when up")
    p.add_argument("--sasl", choices=["plain", "scram-sha-256", "oauthbearer"],
                   help="also listen with SASL_PLAINTEXT (port + 1000) for user kinspect (PLAIN "
                        "and SCRAM-SHA-256; the password is kept in the lab dir, never printed); "
                        "oauthbearer: OAUTHBEARER too, with the lab's own token endpoint")
    p.add_argument("--tls", action="store_true",
                   help="a CA of the lab's own and SSL (port + 2000) and SASL_SSL (port + 3000) "
                        "listeners; implies --sasl scram-sha-256")
    p.add_argument("--authorizer", action="store_true",
                   help="Kafka's ACL authorizer, nothing allowed without an ACL (super users: "
                        "the PLAINTEXT listener and kinspect); needs --sasl or --tls; users: "
                        "kinspect lab user add")


def backend(name: str | None = None, say: Callable[[str], None] = progress) -> LabBackend:
    from kinspect.lab import open_backend

    return open_backend(name, progress=say)


def cmd_fetch(args: argparse.Namespace) -> int:
    with Display() as display:
        kafka = dist.fetch(display.line, force=args.force, version=args.kafka)
    print(f"Kafka {kafka.version} jars in {kafka.libs}")
    return 0


def cmd_images(args: argparse.Namespace) -> int:
    from kinspect.lab import docker_engine, images

    with Display() as display:
        kafka = dist.ensure(display.line, version=args.kafka)
        client = docker_engine.connect()
        tag = images.ensure(client, kafka, display.line, rebuild=args.rebuild)
        latest = kafka.version == dist.kafka_version()  # docker-compose.yml runs latest (3.x)
        if latest:
            images.tag_latest(client, tag)
            relay = images.ensure_kinspect(client, kafka, display.line, rebuild=args.rebuild)
    if not latest:
        print(f"image {tag} (on {images.BASE_IMAGE})")
        return 0
    print(f"image {tag}, also tagged {images.KAFKA_REPOSITORY}:latest (on {images.BASE_IMAGE})")
    # kinspect's own, for hosts that cannot reach the lab (container_relay.py)
    print(f"image {relay} (kinspect in a container, on {tag})")
    return 0


def _options(args: argparse.Namespace) -> UpOptions:
    return UpOptions(brokers=args.brokers, preset=args.preset,
                     overrides=presets.parse_overrides(args.broker_config),
                     network=args.network, base_port=args.base_port, timeout_s=args.timeout,
                     sasl=args.sasl, mode=args.mode, controllers=args.controllers,
                     kafka=args.kafka, tls=args.tls, authorizer=args.authorizer,
                     features=dict(args.feature), log_dirs=args.log_dirs,
                     broker_heap=args.broker_heap, power=args.power)


def _feature(text: str) -> tuple[str, int]:
    """NAME=LEVEL, as kafka-storage format --feature takes it."""
    name, _, level = text.partition("=")
    if dist.feature_problem(name.strip()) or not level.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected NAME=LEVEL, e.g. "
                                         f"eligible.leader.replicas.version=0, not {text!r}")
    return name.strip(), int(level)


def cmd_up(args: argparse.Namespace) -> int:
    options = _options(args)
    options.validate()  # before the backend is chosen: a bad option is the only line
    writable_dir(kinspect_home(), "KINSPECT_HOME")
    started = time.monotonic()
    with Display() as display:
        lab = backend(args.backend, display.line)
        lab.up(options, display.line)
        display.say(f"lab up in {time.monotonic() - started:.1f} s")
    return print_status(lab, args.json)


def cmd_reset(args: argparse.Namespace) -> int:
    from kinspect.lab import reset_lab

    options = _options(args)
    options.validate()
    writable_dir(kinspect_home(), "KINSPECT_HOME")
    stop_loads_on_lab()
    started = time.monotonic()
    with Display() as display:
        lab, _ = reset_lab(options, display.line, args.backend)
        display.say(f"lab reset in {time.monotonic() - started:.1f} s")
    return print_status(lab, args.json)


def stop_loads_on_lab() -> None:
    """Stop the loads that write to the running lab before it goes (or is reset): left alone,
    their producers would hammer whatever comes up next on those addresses."""
    from kinspect.lab import running_lab, sasl, tls
    from kinspect.load.active import running_loads, stop_loads

    state = running_lab()
    if state is None:
        return
    addresses = {b.address for b in state.brokers}
    if "sasl" in state.extra:
        addresses |= {sasl.sasl_address(b) for b in state.brokers}
    if tls.enabled(state):
        addresses |= {a for b in state.brokers for a in (tls.ssl_address(b),
                                                          tls.sasl_ssl_address(b))}
    aimed = [load for load in running_loads() if load.aims_at(addresses)]
    for load in aimed:
        progress(f"stopping {load.what()} (pid {load.pid}, run dir {load.run_dir}): "
                 "it uses this lab")
    for load in stop_loads(aimed):
        progress(f"the load in {load.run_dir} (pid {load.pid}) did not stop within 15 s")


def cmd_down(args: argparse.Namespace) -> int:
    stop_loads_on_lab()
    if not backend().down(progress):
        print("no lab is running; nothing to do")
        return 0
    print("lab down")
    return 0


def print_status(lab: LabBackend, as_json: bool) -> int:
    state = lab.state()
    if state is None:
        raise KinspectError("no lab is running (start one with: kinspect lab up)")
    faults = state.network != "loopback"
    data = status_json(state, network_faults=faults)
    if as_json:
        print(json.dumps(data))
        return 0
    _print_cluster(state, data)
    _print_nodes(data)
    print(f"partitions: {_groups(data)}")
    _print_network(lab, data, faults)
    print("settings: " + ", ".join(f"{k}={v}" for k, v in data["broker_config"].items()))
    _print_listeners(data)
    return 0


def _print_cluster(state: LabState, data: StatusJson) -> None:
    """The lab's own lines: what it runs, its addresses, who holds a rootless one."""
    line = (f"lab {data['lab_id']}  backend {data['backend']}  network {data['network']}  "
            f"preset {data['preset']}  Kafka {data['kafka_version']}")
    if "broker_heap" in state.extra:
        line += f"  broker heap {data['broker_heap']}"
    features = data["features"]
    if features:
        line += "".join(f"  {name}={level}" for name, level in features.items())
    print(line)
    if state.kraft:
        print(f"bootstrap {data['bootstrap']}   mode KRaft   {_quorum_line(state)}")
    else:
        print(f"bootstrap {data['bootstrap']}   zookeeper {data['zookeeper']}")
    if data["rootless_holder"]:
        print(f"rootless: in a user namespace held by pid {data['rootless_holder']} "
              "(kinspect lab down ends it)")


def _print_nodes(data: StatusJson) -> None:
    """One row a node; a docker lab's rows name each node's container."""
    in_containers = data["backend"] == "docker"
    header = f"{'NODE':8} {'ROLE':10} {'STATE':9} {'ADDRESS':22} {'PID':8}"
    if in_containers:
        header += " CONTAINER (docker logs / exec)"
    print(header.rstrip())
    for node in data["nodes"]:
        row = (f"{node['name']:8} {node['role']:10} {node['state']:9} {node['address']:22} "
               f"{_pid(node['pid']):8}")
        if in_containers:
            row += f" {node['container']}"
        print(row.rstrip())


def _pid(pid: int | None) -> str:
    if not pid:
        return "-"
    return str(pid)


def _groups(data: StatusJson) -> str:
    """The network partition's groups, `none (healed)` when there is none."""
    groups = cut_text(data["groups"])
    if not groups:
        return "none (healed)"
    return groups


def _print_network(lab: LabBackend, data: StatusJson, faults: bool) -> None:
    """What network faults this lab can make, and the links slowed now."""
    if not faults:
        reason = can_use_netns()
        if reason is None:
            reason = "loopback network"
        print(f"network faults: unavailable ({reason})")
        return
    slowed = "; ".join(f"{name} {shape['words']} ({shape['how']})"
                       for name, shape in data["slowed"].items())
    if not slowed:
        slowed = "none"
    print(f"slow links: {slowed}")
    print(f"link shaping: {lab.shaping_kit().words}")


def _print_listeners(data: StatusJson) -> None:
    """The secured listeners, when the lab has them, and who may use them."""
    if data["sasl"]:
        print(f"sasl: SASL_PLAINTEXT at {data['sasl']['bootstrap']}, user "
              f"{data['sasl']['username']}, PLAIN or SCRAM-SHA-256, password in "
              f"{data['sasl']['password_file']}")
    if data.get("oauth"):
        print(f"oauth: OAUTHBEARER on the SASL listeners, tokens at "
              f"{data['oauth']['token_endpoint']} for client {data['oauth']['client_id']}, "
              f"secret in {data['oauth']['client_secret_file']}")
    if data["tls"]:
        print(f"tls: SSL at {data['tls']['ssl_bootstrap']}, SASL_SSL at "
              f"{data['tls']['sasl_ssl_bootstrap']}, CA {data['tls']['ca']}")
    if data["authorizer"]:
        users = ", ".join(data["authorizer"]["users"])
        if not users:
            users = "none yet (kinspect lab user add)"
        print(f"authorizer: {data['authorizer']['class']}, super users "
              f"{', '.join(data['authorizer']['super_users'])}; lab users: {users}")


def _quorum_line(state: LabState) -> str:
    """Who leads the controller quorum now, asked of the voters themselves."""
    from kinspect.clients.quorum import describe_quorum
    from kinspect.lab.topology import node_of

    voters = ", ".join(n.name for n in state.voters)
    answer = describe_quorum(list(state.controller_addresses.values()), timeout_s=2.0)
    if answer is None or answer.leader_id is None:
        return f"quorum {voters}: no leader answers"
    return (f"quorum {voters}: {node_of(answer.leader_id)} leads (node {answer.leader_id}, "
            f"epoch {answer.leader_epoch})")


def cmd_status(args: argparse.Namespace) -> int:
    return print_status(backend(), args.json)


def _node_fault(kind: FaultKind, args: argparse.Namespace) -> Fault:
    return Fault(kind, args.node)


def cmd_fault(args: argparse.Namespace) -> int:
    """Every fault verb: the parser built the Fault, the lab carries it out."""
    print(backend().apply(args.fault(args)))
    return 0


def _secure_lab() -> tuple[LabBackend, LabState]:
    """The running lab, refused in one line without a SASL listener."""
    from kinspect.lab import authorizer

    lab = backend()
    state = lab.state()
    if state is None:
        raise KinspectError("no lab is running (start one with: kinspect lab up --tls "
                            "--authorizer)")
    authorizer.require_secure(state)
    return lab, state


def _user_json(state: LabState, user: LabUser, acls: list[str] | None) -> JsonObject:
    from kinspect.lab import authorizer

    return {"name": user.name, "password_file": user.password_file,
            "grants": [g.words for g in user.grants], "acls": acls,
            **authorizer.client_settings(state, user).to_json()}


def cmd_user_add(args: argparse.Namespace) -> int:
    from kinspect.lab import authorizer
    from kinspect.lab.state import lab_lock

    authorizer.check_user_name(args.name)
    lab, state = _secure_lab()
    with lab_lock(lab.root):
        user = authorizer.add_user(lab.root, state, args.name, list(args.allow))
    if args.json:
        print(json.dumps(_user_json(state, user, None)))
        return 0
    grants = ", ".join(g.words for g in user.grants)
    if not grants:
        grants = "no ACL"
    print(f"user {user.name}: {grants}; password in {user.password_file}")
    if not authorizer.enabled(state):
        print("(this lab has no authorizer: every user may do everything; "
              "lab reset --authorizer to change that)")
    print("a profile for it (config.toml):\n")
    print(authorizer.profile_toml(state, user), end="")
    return 0


def cmd_user_list(args: argparse.Namespace) -> int:
    from kinspect.lab import authorizer

    lab, state = _secure_lab()
    users = authorizer.load_users(authorizer.users_dir(lab.root))
    acls = _acls(state, users)
    if args.json:
        print(json.dumps({"authorizer": authorizer.enabled(state),
                          "users": [_user_json(state, u, acls[u.name]) for u in users]}))
        return 0
    if not users:
        print("no lab users (add one with: kinspect lab user add NAME --allow describe:topic)")
    for user in users:
        print(f"{user.name:16} ACLs {_acls_said(acls[user.name])}   password in "
              f"{user.password_file}")
    return 0


def _acls(state: LabState, users: list[LabUser]) -> dict[str, list[str] | None]:
    """Each user's ACLs as Kafka holds them; None each without an authorizer."""
    from kinspect.lab import authorizer

    if not authorizer.enabled(state):
        return {u.name: None for u in users}
    return {u.name: authorizer.describe_acls(state, u.name) for u in users}


def _acls_said(held: list[str] | None) -> str:
    if held is None:
        return "n/a (no authorizer)"
    if not held:
        return "none"
    return ", ".join(held)


def cmd_user_remove(args: argparse.Namespace) -> int:
    from kinspect.lab import authorizer
    from kinspect.lab.state import lab_lock

    lab, state = _secure_lab()
    with lab_lock(lab.root):
        authorizer.remove_user(lab.root, state, args.name)
    print(f"removed user {args.name} (its ACLs and its SCRAM credential)")
    return 0
