"""Every bad input, as a user types it: one line on stderr, exit code 2, no traceback, nothing
created, nothing started.

Each case runs the real `kinspect` in a subprocess with a sandbox of its own (a file, an empty
folder, run dirs good and bad, scenario files with one mistake each). After it exits, the
sandbox must be byte-for-byte the tree it was, and no process may name the sandbox on its
command line (a load worker or a lab JVM would). The cases without a lab run four at a time;
those with a lab run one after another on the session lab, which must be exactly as it was.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kinspect.scenarios.catalog import CATALOG_DIR
from tests.helpers.recording_story import record_story
from tests.helpers.rundirs import scenario_a

TOPIC = "kinspect-bad-input"  # made on the session lab by the lab cases' fixture
B = ("--bootstrap", "127.0.0.1:1")  # a cluster is named, so the check under test is reached
RUN = ("load", "run", "--topic", "t", "--run-dir", "{new}")
CONSUME = ("consume", "run", "--topic", "t", "--group", "g", "--run-dir", "{new}", *B)


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    says: str  # a fragment of the one error line
    env: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return " ".join(self.args)[:90]


def scenario_file(**changes: tuple[str, str]) -> str:
    """The acks1-isolate-leader scenario with one thing changed: (old, new) text replacements."""
    text = (CATALOG_DIR / "05-acks1-isolate-leader.toml").read_text()
    for old, new in changes.values():
        assert old in text, old
        text = text.replace(old, new)
    return text


SCENARIOS = {
    "rf5": scenario_file(a=("replication_factor = 3", "replication_factor = 5")),
    "kafka9": scenario_file(a=('target = "leader"', 'target = "kafka9"')),
    "nobody": scenario_file(a=('target = "leader"', 'target = "@nobody"')),
    "noload": re.sub(r"\[load\].*?(?=\[\[fault\]\])", "", scenario_file(), flags=re.S),
    "noexpect": scenario_file(a=("[expect]", ""), b=('acked_lost = ">= 1000"\n', ""),
                              c=('lost_blamed_on_target = ">= 0.99"\n', ""),
                              d=('faults_applied = ">= 1"\n', "")),
    "brokers": scenario_file(a=('preset = "demo"', 'preset = "demo"\nbrokers = "three"')),
    "ratenan": scenario_file(a=("rate = 5000", "rate = nan")),
    "partitions": scenario_file(a=("partitions = 1", "partitions = 0")),
    "topicname": scenario_file(a=('name = "test1"', 'name = "test 1!"')),
    "unknownkey": scenario_file(a=("retries = 0", "retries = 0\nretry = 1")),
    "extra": scenario_file(a=("retries = 0", 'retries = 0\nextra = { "no.such.property" = "1" }')),
    "groupmode": scenario_file(a=("[expect]", '[group]\ncommit = "sometimes"\n\n[expect]')),
    "groupkey": scenario_file(a=("[expect]", "[group]\ncrash = 1\n\n[expect]")),
    "grouptype": scenario_file(a=("[expect]", '[group]\nbatch = "ten"\n\n[expect]')),
    "as": scenario_file(a=("for_s = 15", 'for_s = 15\nas = "two words"')),
    "name": scenario_file(a=('name = "acks1-isolate-leader"', 'name = "Acks One!"')),
    "count": scenario_file(a=("count = 100000", "count = -5")),
    "delay": scenario_file(a=("for_s = 15", 'for_s = 15\ndelay_ms = "slow"')),
    "slowdir": scenario_file(a=("for_s = 15", 'for_s = 15\n\n[[fault]]\nafter_s = 1\ndo = "slow"'
                                             '\ndirection = "up"\nrate_kbit = 10')),
    "slowbare": scenario_file(a=("for_s = 15", 'for_s = 15\n\n[[fault]]\nafter_s = 1\n'
                                              'do = "slow"')),
    "nottoml": "this is [ not toml",
}

NO_LAB: list[Case] = [
    # the command line itself
    Case(("nope",), "invalid choice"),
    Case(("--bogus",), "unrecognized arguments"),
    Case(("load",), "required"),
    # load run: numbers
    Case(("load", "run", "--run-dir", "{new}"), "required: --topic"),
    Case((*RUN, "--rate", "nan"), "--rate: must be a number above 0"),
    Case((*RUN, "--rate", "inf"), "--rate: must be a number above 0"),
    Case((*RUN, "--rate", "-5"), "--rate: must be a number above 0"),
    Case((*RUN, "--rate", "0"), "--rate: must be a number above 0"),
    Case((*RUN, "--rate", "fast"), "--rate: must be a number"),
    Case((*RUN, "--count", "0"), "--count: must be a whole number between 1"),
    Case((*RUN, "--count", "-1"), "--count: must be a whole number"),
    Case((*RUN, "--count", "1.5"), "--count: must be a whole number"),
    Case((*RUN, "--count", "nan"), "--count: must be a whole number"),
    Case((*RUN, "--duration", "0"), "--duration: must be a number above 0"),
    Case((*RUN, "--duration", "-1"), "--duration: must be a number above 0"),
    Case((*RUN, "--duration", "nan"), "--duration: must be a number above 0"),
    Case((*RUN, "--count", "5", "--duration", "5"), "not allowed with"),
    Case((*RUN, "--producers", "0"), "--producers: must be a whole number between 1 and 64"),
    Case((*RUN, "--producers", "65"), "--producers: must be a whole number between 1 and 64"),
    Case((*RUN, "--size", "15"), "--size: must be a whole number between 16 and 1,000,000"),
    Case((*RUN, "--size", "2000000"), "--size: must be a whole number between 16"),
    Case((*RUN, "--max-in-flight", "0"), "--max-in-flight: must be a whole number between 1"),
    Case((*RUN, "--linger-ms", "99999999"), "--linger-ms: must be a whole number between 0 and 900,000"),
    Case((*RUN, "--linger-ms", "-1"), "--linger-ms: must be a whole number"),
    Case((*RUN, "--retries", "-1"), "--retries: must be a whole number"),
    Case((*RUN, "--delivery-timeout-ms", "0"), "--delivery-timeout-ms: must be a whole number"),
    # load run: what librdkafka would be told
    Case(RUN + B + ("--acks", "7"), "--acks must be 0, 1 or all, not '7'"),
    Case(RUN + B + ("-X", "acks=7"), "--acks must be 0, 1 or all, not '7'"),
    Case(RUN + B + ("-X", "acks=all", "--acks", "1"), "-X acks=all contradicts --acks 1"),
    Case(RUN + B + ("-X", "request.required.acks=0", "--acks", "all"), "contradicts --acks all"),
    Case(RUN + B + ("-X", "linger.ms=99999999"), "--linger-ms (-X linger.ms) must be a whole"),
    Case(RUN + B + ("-X", "enable.idempotence=maybe"), "must be true or false"),
    Case(RUN + B + ("-X", "bootstrap.servers=x:1"), "give the brokers with --bootstrap"),
    Case(RUN + B + ("-X", "noequals"), "-X expects key=value"),
    Case(RUN + B + ("-X", "=1"), "-X expects key=value"),
    Case(RUN + B + ("-X", "no.such.property=1"), "No such configuration property"),
    Case(RUN + B + ("-X", "queue.buffering.max.kbytes=0"), "librdkafka refuses the producer"),
    Case(RUN + B + ("--idempotent",), "--idempotent needs --acks all"),
    Case(RUN + B + ("--idempotent", "--acks", "all", "--max-in-flight", "6"), "5 at most"),
    # load run: paths and names
    Case(("load", "run", "--topic", "t", "--run-dir", "/proc/kinspect-nope", *B), "cannot be written"),
    Case(("load", "run", "--topic", "t", "--run-dir", "{file}", *B), "is a file, not a directory"),
    Case(("load", "run", "--topic", "t", "--run-dir", "{file}/sub", *B), "is a file, not a directory"),
    Case(("load", "run", "--topic", "t", "--run-dir", "{used}", *B), "already holds a ledger"),
    Case(("load", "run", "--topic", "bad topic!", "--run-dir", "{new}", *B), "not a Kafka topic name"),
    Case(("load", "run", "--topic", "", "--run-dir", "{new}", *B), "not a Kafka topic name"),
    Case(("load", "run", "--topic", "..", "--run-dir", "{new}", *B), "not a Kafka topic name"),
    Case((*RUN, "--bootstrap", "nonsense"), "--bootstrap wants host:port"),
    Case((*RUN, "--bootstrap", "host:99999"), "--bootstrap wants host:port"),
    Case((*RUN, "--bootstrap", "a:1,,b:2"), "--bootstrap wants host:port"),
    Case((*RUN, "--bootstrap", "a:1/chroot"), "--bootstrap wants host:port"),
    Case(RUN + B + ("--zookeeper", "zk"), "--zookeeper wants host:port"),
    Case((*RUN, "--profile", "nope", "--config", "{new}"), "no config file"),
    Case((*RUN, "--profile", "nope", "--config", "{file}"), "not valid TOML"),
    Case((*RUN, "--profile", "nope", "--config", "{empty}"), "cannot read"),
    Case((*RUN, "--profile", "nope", "--config", "{profiles}"), "no profile 'nope'"),
    Case((*RUN, "--profile", "badboot", "--config", "{profiles}"), "bootstrap wants host:port"),
    Case((*RUN, "--profile", "badzk", "--config", "{profiles}"), "zookeeper wants host:port"),
    Case((*RUN, "--profile", "badrefresh", "--config", "{profiles}"), "refresh_s must be between"),
    Case((*RUN, "--profile", "unknownkey", "--config", "{profiles}"), "unknown key 'colour'"),
    Case((*RUN, "--profile", "noenv", "--config", "{profiles}"), "which is not set"),
    Case((*RUN, "--profile", "nofile", "--config", "{profiles}"), "names a file that cannot be read"),
    Case((*RUN, "--origin", "x"), "invalid choice"),
    Case(RUN, "no lab is running"),
    # load stop
    Case(("load", "stop"), "required: --run-dir"),
    Case(("load", "stop", "--run-dir", "{new}"), "does not exist"),
    Case(("load", "stop", "--run-dir", "{file}"), "is a file, not a directory"),
    Case(("load", "stop", "--run-dir", "{empty}"), "is not a kinspect run dir"),
    Case(("load", "stop", "--run-dir", "{idle}"), "no load is running"),
    Case(("load", "stop", "--run-dir", "{badsettings}"), "settings.json: --count must be"),
    # consume run / stop
    Case(("consume", "run", "--topic", "t", "--run-dir", "{new}", *B), "required: --group"),
    Case((*CONSUME, "--fail-rate", "2"), "--fail-rate: must be a number"),
    Case((*CONSUME, "--fail-rate", "nan"), "--fail-rate: must be a number"),
    Case((*CONSUME, "--crash-after", "0"), "--crash-after: must be a whole number"),
    Case((*CONSUME, "--crash-after", "5", "--crash-at", "1"), "not allowed with argument"),
    Case((*CONSUME, "--commit", "sometimes"), "invalid choice"),
    Case((*CONSUME, "--commit", "transaction"), "--commit transaction needs --output"),
    Case((*CONSUME, "--output", "t"), "--output must be another topic"),
    Case((*CONSUME, "--output", "a b"), "not a Kafka topic name"),
    Case((*CONSUME, "--consumers", "65"), "--consumers: must be a whole number"),
    Case((*CONSUME, "--isolation", "dirty"), "invalid choice"),
    Case(("consume", "run", "--topic", "a b", "--group", "g", "--run-dir", "{new}", *B),
         "not a Kafka topic name"),
    Case(("consume", "run", "--topic", "t", "--group", "", "--run-dir", "{new}", *B),
         "--group must be a name"),
    Case(("consume", "run", "--topic", "t", "--group", "g", "--run-dir", "{file}", *B),
         "is a file, not a directory"),
    Case(("consume", "stop", "--run-dir", "{new}"), "does not exist"),
    Case(("consume", "stop", "--run-dir", "{empty}"), "no consumer group is running"),
    # load run's client failure modes
    Case((*RUN, "--crash-at", "0", *B), "--crash-at: must be a number"),
    Case((*RUN, "--buffer-full", "drop", *B), "invalid choice"),
    # load slow
    Case(("load", "slow", "--topic", "t", "--count", "-1", *B), "--count: must be a whole number"),
    Case(("load", "slow", "--topic", "t", "--count", "0", *B), "--count: must be a whole number"),
    Case(("load", "slow", "--topic", "t", "--acks", "7", *B), "--acks must be 0, 1 or all"),
    Case(("load", "slow", "--topic", "t", "-X", "acks=9", *B), "--acks must be 0, 1 or all"),
    Case(("load", "slow", "--topic", "a b", *B), "not a Kafka topic name"),
    Case(("load", "slow", "--topic", "t", "--bootstrap", "x"), "--bootstrap wants host:port"),
    # verify
    Case(("verify", "--topic", "t", "--run-dir", "{new}", *B), "does not exist"),
    Case(("verify", "--topic", "t", "--run-dir", "{file}", *B), "is a file, not a directory"),
    Case(("verify", "--topic", "t", "--run-dir", "{empty}", *B), "is not a kinspect run dir"),
    Case(("verify", "--topic", "t", "--run-dir", "{badsettings}", *B), "--count must be"),
    Case(("verify", "--topic", "t", "--run-dir", "{garbled}", *B), "settings.json cannot be read"),
    Case(("verify", "--topic", "t", "--run-dir", "{idle}", "--timeout", "0", *B), "--timeout: must"),
    Case(("verify", "--topic", "t", "--run-dir", "{idle}", "--timeout", "nan", *B), "--timeout:"),
    Case(("verify", "--topic", "t", "--run-dir", "{idle}", "--timeout", "-1", *B), "--timeout:"),
    Case(("verify", "--topic", "other", "--run-dir", "{idle}", *B), "is a run on 't', not 'other'"),
    Case(("verify", "--topic", "bad topic", "--run-dir", "{idle}", *B), "not a Kafka topic name"),
    Case(("verify", "--run-dir", "{idle}", *B), "required: --topic"),
    # postmortem: everything is checked before Spark starts
    Case(("postmortem", "{new}"), "does not exist"),
    Case(("postmortem", "{file}"), "is a file, not a directory"),
    Case(("postmortem", "{empty}"), "not a kinspect run dir"),
    Case(("postmortem", "{badsettings}"), "settings.json: --count must be"),
    Case(("postmortem", "{unverified}"), "final_log/ missing"),
    Case(("postmortem", "{good}", "--out", "/proc/kinspect-nope"), "--out /proc/kinspect-nope cannot"),
    Case(("postmortem", "{good}", "--out", "{file}"), "is a file, not a directory"),
    Case(("postmortem", "{good}", "--out", "{file}/x"), "is a file, not a directory"),
    Case(("postmortem", "{good}", "--master", "banana"), "is not a Spark master"),
    Case(("postmortem", "{good}", "--driver-memory", "lots"), "is not a size"),
    Case(("postmortem", "{good}", "--driver-memory", "0g"), "is not a size"),
    Case(("postmortem", "{good}", "--conf", "nokey"), "--conf wants KEY=VALUE"),
    Case(("postmortem",), "required: RUN_DIR"),
    Case(("postmortem", "--serve", "--master", "banana"), "is not a Spark master"),
    # snapshot, watch, health
    Case(("watch", "--interval", "0", *B), "--interval: must be a number between 0.2 and 300"),
    Case(("watch", "--interval", "-1", *B), "--interval: must be a number"),
    Case(("watch", "--interval", "nan", *B), "--interval: must be a number"),
    Case(("watch", "--interval", "1000", *B), "--interval: must be a number"),
    Case(("watch", "--run-dir", "/proc/kinspect-nope", *B), "cannot be written"),
    Case(("watch", "--run-dir", "{file}", *B), "is a file, not a directory"),
    Case(("watch", "--bootstrap", "x"), "--bootstrap wants host:port"),
    Case(("watch", "--zookeeper", "a:b", *B), "--zookeeper wants host:port"),
    Case(("snapshot", "--topic", "bad topic", *B), "not a Kafka topic name"),
    Case(("snapshot", "--bootstrap", ":9092"), "--bootstrap wants host:port"),
    Case(("snapshot", "-X", "foo", *B), "-X expects key=value"),
    Case(("snapshot",), "no lab is running"),
    Case(("health", "--timeout", "0", *B), "--timeout: must be a number between 1 and 600"),
    Case(("health", "--timeout", "-1", *B), "--timeout: must be a number"),
    Case(("health", "--timeout", "nan", *B), "--timeout: must be a number"),
    Case(("health", "--timeout", "601", *B), "--timeout: must be a number"),
    Case(("health", "--bootstrap", "x:0"), "--bootstrap wants host:port"),
    Case(("health", "--profile", "badboot", "--config", "{profiles}"), "bootstrap wants host:port"),
    # lab
    Case(("lab", "up", "--timeout", "-5"), "--timeout: must be a number between 1 and 3,600"),
    Case(("lab", "up", "--timeout", "nan"), "--timeout: must be a number"),
    Case(("lab", "up", "--base-port", "70000"), "--base-port: must be a whole number between 1,024"),
    Case(("lab", "up", "--base-port", "-1"), "--base-port: must be a whole number"),
    Case(("lab", "up", "--brokers", "0"), "--brokers must be between 1 and 9"),
    Case(("lab", "up", "--brokers", "10"), "--brokers must be between 1 and 9"),
    Case(("lab", "up", "--brokers", "two"), "invalid int value"),
    Case(("lab", "up", "--preset", "nope"), "invalid choice"),
    Case(("lab", "up", "--broker-config", "oops"), "--broker-config expects key=value"),
    Case(("lab", "up", "--backend", "nope"), "invalid choice"),
    Case(("lab", "up", "--sasl", "nope"), "invalid choice"),
    Case(("lab", "up", "--authorizer"), "--authorizer needs --sasl or --tls"),
    Case(("lab", "reset", "--authorizer"), "--authorizer needs --sasl or --tls"),
    Case(("lab", "user", "add", "x", "--allow", "peek:topic"), "unknown operation 'peek'"),
    Case(("lab", "user", "add", "x", "--allow", "read"), "expected OPERATION:TYPE[:NAME]"),
    Case(("lab", "user", "add", "x", "--allow", "read:table"), "unknown resource type"),
    Case(("lab", "user", "add", "x", "--allow", "read:topic:a*b"), "'*' only at the end"),
    Case(("lab", "user", "add", "kinspect"), "is the lab's own"),
    Case(("lab", "user", "add", "a b"), "letters, digits"),
    Case(("lab", "user", "add", "x"), "no lab is running"),
    Case(("lab", "user", "list"), "no lab is running"),
    Case(("lab", "user", "remove", "x"), "no lab is running"),
    Case(("lab", "user"), "required: ACTION"),
    Case(("lab", "up", "--network", "nope"), "invalid choice"),
    Case(("lab", "up"), "KINSPECT_HOME /proc/kinspect-nope cannot be written",
         env={"KINSPECT_HOME": "/proc/kinspect-nope"}),
    Case(("lab", "reset", "--timeout", "0"), "--timeout: must be a number"),
    Case(("lab", "reset", "--base-port", "70000"), "--base-port: must be a whole number"),
    Case(("lab", "kill"), "required: node"),
    Case(("lab", "kill", "kafka1"), "no lab is running"),
    Case(("lab", "partition"), "required: GROUP"),
    Case(("lab", "isolate", "kafka1", "--from", "moon"), "invalid choice"),
    Case(("lab", "slow", "kafka2"), "a slow link needs --delay, --rate or --loss"),
    Case(("lab", "slow", "kafka2", "--rate", "fast"), "--rate: wants e.g. 200kbit or 1mbit"),
    Case(("lab", "slow", "kafka2", "--rate", "1tbit"), "--rate: wants e.g. 200kbit"),
    Case(("lab", "slow", "kafka2", "--loss", "200"), "--loss: must be above 0 and at most 100"),
    Case(("lab", "slow", "kafka2", "--rate", "1m", "--jitter", "5"), "give --delay too"),
    Case(("lab", "slow", "kafka2", "--rate", "1m", "--direction", "up"), "invalid choice"),
    Case(("lab", "heal"), "no lab is running"),
    Case(("lab", "status"), "no lab is running"),
    Case(("lab", "frobnicate"), "invalid choice"),
    # scenario files: checked whole before any lab is touched
    Case(("scenario", "run", "nope"), "unknown scenario 'nope'"),
    Case(("scenario", "run", "{new}.toml"), "cannot read"),
    Case(("scenario", "run", "{sc_rf5}"), "replication_factor 5 is more than the lab's 3 brokers"),
    Case(("scenario", "run", "{sc_kafka9}"), "target 'kafka9' is not in a lab of 3 brokers"),
    Case(("scenario", "run", "{sc_nobody}"), "target '@nobody' names no earlier step's `as`"),
    Case(("scenario", "run", "{sc_noload}"), "[load] is required"),
    Case(("scenario", "run", "{sc_noexpect}"), "[expect] is required"),
    Case(("scenario", "run", "{sc_brokers}"), "[lab] brokers must be a whole number"),
    Case(("scenario", "run", "{sc_ratenan}"), "--rate must be a number above 0"),
    Case(("scenario", "run", "{sc_partitions}"), "[topic] partitions must be a whole number"),
    Case(("scenario", "run", "{sc_topicname}"), "is not a Kafka topic name"),
    Case(("scenario", "run", "{sc_unknownkey}"), "unknown key 'retry' in [load]"),
    Case(("scenario", "run", "{sc_extra}"), "No such configuration property"),
    Case(("scenario", "run", "{sc_groupmode}"), "[group]: --commit must be one of"),
    Case(("scenario", "run", "{sc_groupkey}"), "unknown key 'crash' in [group]"),
    Case(("scenario", "run", "{sc_grouptype}"), "[group] batch must be a whole number"),
    Case(("scenario", "run", "{sc_as}"), "as must be a name like old_leader"),
    Case(("scenario", "run", "{sc_name}"), "must be lower-case letters"),
    Case(("scenario", "run", "{sc_count}"), "--count must be a whole number"),
    Case(("scenario", "run", "{sc_delay}"), 'delay_ms shapes a slow link; only do = "slow"'),
    Case(("scenario", "run", "{sc_slowdir}"), "direction must be in, out or both, not 'up'"),
    Case(("scenario", "run", "{sc_slowbare}"), "needs delay_ms, rate_kbit or loss_pct"),
    Case(("scenario", "run", "{sc_nottoml}"), "not valid TOML"),
    Case(("scenario", "run", "acks1-kill-leader", "--run-dir", "{file}"), "is a file"),
    Case(("scenario", "run", "acks1-kill-leader", "--run-dir", "{idle}"), "is not empty"),
    Case(("scenario", "run", "acks1-kill-leader", "--run-dir", "/proc/kinspect-nope"),
         "cannot be written"),
    Case(("scenario", "matrix", "--repeat", "0"), "--repeat: must be a whole number between 1"),
    Case(("scenario", "matrix", "--repeat", "nan"), "--repeat: must be a whole number"),
    Case(("scenario", "matrix", "--names", "nope"), "unknown scenario 'nope'"),
    Case(("scenario", "matrix", "--names", "acks1-kill-leader", "{sc_kafka9}"), "kafka9"),
    Case(("scenario", "matrix", "--out", "{doc}"), "no <!-- scenario-matrix --> … "),
    Case(("scenario", "matrix", "--out", "{empty}"), "is a directory"),
    Case(("scenario", "matrix", "--out", "/proc/kinspect-nope/t.md"), "cannot be written"),
    Case(("scenario", "list", "--bogus"), "unrecognized arguments"),
    # the TUI's commands
    Case(("demo", "--backend", "nope"), "invalid choice"),
    Case(("ui", "--bootstrap", "x"), "--bootstrap wants host:port"),
    Case(("ui",), "no lab is running"),
    Case(("ui", "--profile", "nope", "--config", "{new}"), "no config file"),
    # replay: the recording is read and --at checked against it before the screen opens
    Case(("replay",), "required: DIR"),
    Case(("replay", "{new}"), "does not exist"),
    Case(("replay", "{file}"), "is a file, not a directory"),
    Case(("replay", "{empty}"), "is not a recording"),
    Case(("replay", "{good}"), "is not a recording"),
    Case(("replay", "{badrec}"), "holds no readable recording"),
    Case(("replay", "{pointer}"), "whose recording is gone"),
    Case(("replay", "{rec}", "--at", "soon"), "--at 'soon' is not seconds from the start"),
    Case(("replay", "{rec}", "--at", "9999"), "--at '9999' is outside the recording"),
    Case(("replay", "{rec}", "--at", "-3"), "--at '-3' is not seconds"),
    Case(("replay", "{rec}", "--at", "25:00"), "is outside the recording"),
    Case(("replay", "{rec}", "--speed", "0"), "--speed: must be a number between 0.25 and 16"),
    Case(("replay", "{rec}", "--speed", "nan"), "--speed: must be a number"),
    Case(("replay", "{rec}", "--speed", "32"), "--speed: must be a number"),
]

PROFILES = """
[clusters.badboot]
bootstrap = "not an address"
[clusters.badzk]
bootstrap = "a:1"
zookeeper = "zk:two"
[clusters.badrefresh]
bootstrap = "a:1"
refresh_s = nan
[clusters.unknownkey]
bootstrap = "a:1"
colour = "blue"
[clusters.noenv]
bootstrap = "a:1"
[clusters.noenv.kafka]
"sasl.password" = "${env:KINSPECT_SURELY_NOT_SET}"
[clusters.nofile]
bootstrap = "a:1"
[clusters.nofile.kafka]
"sasl.password" = "${file:/nonexistent/kinspect-secret}"
"""


def make_sandbox(root: Path) -> dict[str, str]:
    """The files and folders the cases name, each with one thing wrong (or right)."""
    root.mkdir(parents=True)
    (root / "home").mkdir()
    (root / "a-file").write_text("not a folder\n")
    (root / "empty").mkdir()
    settings = {"topic": "t", "bootstrap": "127.0.0.1:1", "acks": "1", "count": 10}
    for name in ("idle", "used", "garbled"):
        (root / name).mkdir()
        (root / name / "settings.json").write_text(json.dumps(settings))
    (root / "used" / "ledger").mkdir()
    (root / "used" / "ledger" / "p000-000000.parquet").write_bytes(b"PAR1")
    (root / "garbled" / "settings.json").write_text("{not json")
    good = scenario_a(root / "good")
    bad = scenario_a(root / "badsettings")
    (bad / "settings.json").write_text(json.dumps({**settings, "count": "many"}))
    unverified = scenario_a(root / "unverified")
    for part in (unverified / "final_log").iterdir():
        part.unlink()
    (unverified / "final_log").rmdir()
    (root / "doc.md").write_text("# a document without the matrix markers\n")
    (root / "profiles.toml").write_text(PROFILES)
    record_story(root / "rec" / "recording", steps=10)
    (root / "badrec" / "recording").mkdir(parents=True)
    (root / "badrec" / "recording" / "seg-0000000000001.jsonl.gz").write_bytes(b"not gzip")
    (root / "pointer").mkdir()
    (root / "pointer" / "recording.json").write_text(json.dumps(
        {"session": str(root / "gone"), "from_ms": 1, "to_ms": None}))
    paths = {"file": root / "a-file", "empty": root / "empty", "new": root / "new" / "run",
             "idle": root / "idle", "used": root / "used", "garbled": root / "garbled",
             "good": good, "badsettings": bad, "unverified": unverified, "doc": root / "doc.md",
             "profiles": root / "profiles.toml", "home": root / "home", "rec": root / "rec",
             "badrec": root / "badrec", "pointer": root / "pointer"}
    for name, text in SCENARIOS.items():
        path = root / f"sc-{name}.toml"
        path.write_text(text)
        paths[f"sc_{name}"] = path
    return {k: str(v) for k, v in paths.items()}


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under root with its size and mtime: what 'nothing written' compares."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))}


def processes_naming(text: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(f"{proc.name}: {cmdline[:200]}")
    return found


@dataclass
class Outcome:
    case: Case
    proc: subprocess.CompletedProcess[str]
    changed: list[str]
    left_running: list[str]


def run_case(case: Case, root: Path, env: dict[str, str] | None = None) -> Outcome:
    paths = make_sandbox(root)
    args = [a.format(**paths) for a in case.args]
    before = tree(root)
    environment = {**os.environ, "KINSPECT_HOME": paths["home"], "KINSPECT_CONFIG": paths["new"],
                   **(env or {}), **case.env}
    proc = subprocess.run([sys.executable, "-m", "kinspect", *args], capture_output=True,
                          text=True, timeout=120, env=environment, stdin=subprocess.DEVNULL)
    after = tree(root)
    changed = sorted(set(before.items()) ^ set(after.items()))
    return Outcome(case, proc, [c[0] for c in changed], processes_naming(str(root)))


def assert_refused(outcome: Outcome) -> None:
    proc, case = outcome.proc, outcome.case
    shown = f"kinspect {' '.join(case.args)}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    assert proc.returncode == 2, shown
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kinspect: error: "), shown
    assert case.says in lines[0], shown
    assert "Traceback" not in proc.stderr and not proc.stdout.strip(), shown
    assert not outcome.changed, f"{shown}\nwritten: {outcome.changed}"
    assert not outcome.left_running, f"{shown}\nstarted: {outcome.left_running}"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every no-lab case, run four at a time (each in its own sandbox)."""
    root = tmp_path_factory.mktemp("bad-input")
    with ThreadPoolExecutor(4) as pool:
        done = pool.map(lambda ic: run_case(ic[1], root / f"case-{ic[0]:03d}"),
                        enumerate(NO_LAB))
        return {o.case.id: o for o in done}


def test_the_table_is_large_and_covers_every_command() -> None:
    commands = {c.args[0] for c in NO_LAB} | {c.args[0] for c in WITH_LAB}
    assert len(NO_LAB) + len(WITH_LAB) >= 100
    assert commands >= {"load", "verify", "postmortem", "watch", "snapshot", "health", "lab",
                        "scenario", "demo", "ui", "replay"}
    assert len({c.id for c in NO_LAB}) == len(NO_LAB), "two cases with the same id"


@pytest.mark.parametrize("case", NO_LAB, ids=lambda c: c.id)
def test_refused_without_a_lab(case: Case, outcomes: dict[str, Outcome]) -> None:
    assert_refused(outcomes[case.id])


# With the session lab running: the lab must come out exactly as it went in.
WITH_LAB: list[Case] = [
    Case(("lab", "user", "add", "x", "--allow", "describe:topic"), "lab users log in with SASL"),
    Case(("load", "run", "--topic", "kinspect-no-such-topic", "--run-dir", "{new}"),
         "topic 'kinspect-no-such-topic' does not exist"),
    Case(("load", "run", "--topic", TOPIC, "--run-dir", "{new}", "--count", "0"), "--count:"),
    Case(("load", "run", "--topic", TOPIC, "--run-dir", "{new}", "-X", "acks=7"), "--acks must"),
    Case(("load", "run", "--topic", TOPIC, "--run-dir", "{new}", "-X", "no.such=1"),
         "No such configuration property"),
    Case(("load", "run", "--topic", TOPIC, "--run-dir", "/proc/kinspect-nope"), "cannot be"),
    Case(("load", "run", "--topic", TOPIC, "--run-dir", "{new}", "--size", "2000000"), "--size:"),
    Case(("load", "run", "--topic", TOPIC, "--run-dir", "{new}", "--rate", "nan"), "--rate:"),
    Case(("load", "slow", "--topic", TOPIC, "--count", "0"), "--count:"),
    Case(("load", "stop", "--run-dir", "{new}"), "does not exist"),
    Case(("verify", "--topic", TOPIC, "--run-dir", "{new}"), "does not exist"),
    Case(("lab", "kill", "kafka9"), "unknown node 'kafka9'"),
    Case(("lab", "pause", "zk2"), "unknown node 'zk2'"),
    Case(("lab", "partition", "kafka1,kafka1"), "names a node twice"),
    Case(("lab", "isolate", "kafka9"), "unknown node"),
    Case(("lab", "start", "kafka1"), "already running"),
    Case(("lab", "up", "--timeout", "-5"), "--timeout:"),
    Case(("lab", "reset", "--base-port", "70000"), "--base-port:"),
    Case(("lab", "reset", "--broker-config", "oops"), "--broker-config expects key=value"),
    Case(("scenario", "run", "{sc_rf5}"), "replication_factor 5"),
    Case(("scenario", "run", "{sc_kafka9}"), "kafka9"),
    Case(("scenario", "run", "{sc_noload}"), "[load] is required"),
    Case(("watch", "--interval", "0"), "--interval:"),
    Case(("health", "--timeout", "0"), "--timeout:"),
    Case(("snapshot", "--zookeeper", "{zk}/kinspect-no-such-chroot"),
         "holds no Kafka cluster (no /brokers/ids under the chroot /kinspect-no-such-chroot"),
    Case(("watch", "--zookeeper", "{zk}/kinspect-no-such-chroot"), "holds no Kafka cluster"),
]


@pytest.fixture
def lab_as_it_was(lab: dict[str, Any]) -> Iterator[dict[str, Any]]:
    from kinspect.lab.topics import create_topics
    from tests.helpers import kinspect

    create_topics(lab["bootstrap"], {TOPIC: 1})
    yield lab
    after = json.loads(kinspect("lab", "status", "--json").stdout)
    assert after["lab_id"] == lab["lab_id"]
    assert [(n["name"], n["state"], n["pid"]) for n in after["nodes"]] == \
        [(n["name"], n["state"], n["pid"]) for n in lab["nodes"]]
    assert after["groups"] == []


@pytest.mark.lab
@pytest.mark.parametrize("case", WITH_LAB, ids=lambda c: c.id)
def test_refused_with_a_lab(case: Case, lab_as_it_was: dict[str, Any], tmp_path: Path) -> None:
    zk = {"zk": lab_as_it_was["zookeeper"]}
    case = Case(tuple(a.replace("{zk}", zk["zk"]) for a in case.args), case.says, case.env)
    assert_refused(run_case(case, tmp_path / "sandbox", env={
        "KINSPECT_HOME": os.environ["KINSPECT_HOME"], "KINSPECT_CONFIG": "/nonexistent"}))
