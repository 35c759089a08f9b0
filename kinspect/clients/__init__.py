"""The clients floor: how kinspect connects, below everything that observes or acts.

Quiet kazoo and librdkafka factories, a ZooKeeper session as a context manager, the one parser
of a partition's state znode, and the probe that asks one broker what it believes. The lab
(which acts), the sources (which observe) and the load all build on these and on nothing of
each other.

In: a cluster target's addresses and security settings. Out: connected, quiet clients (kazoo,
librdkafka, kafka-python's wire), and typed answers to the questions the AdminClient does not
ask for us (DescribeQuorum, DescribeLogDirs, ListPartitionReassignments,
DescribeTopicPartitions, a broker's own beliefs, consumer groups in a process of their own).
"""

import importlib.util
import logging
import sys


def _kafka_python_lean() -> None:
    """Register kafka-python's package without running its `__init__`, which imports its
    consumer, producer and admin client (~40 ms of every one-shot command's start). kinspect
    uses only its connection, protocol and errors modules, and they import what they need;
    `from kafka import KafkaConsumer` is the one thing this rules out."""
    if "kafka" in sys.modules:
        return
    spec = importlib.util.find_spec("kafka")
    if spec is None or spec.loader is None:
        return  # not installed: the import that needs it says so
    sys.modules["kafka"] = importlib.util.module_from_spec(spec)
    logging.getLogger("kafka").addHandler(logging.NullHandler())  # as its __init__ does


_kafka_python_lean()
