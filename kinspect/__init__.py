"""kinspect: a terminal inspector and fault console for Apache Kafka (ZooKeeper mode)."""

__version__ = "0.1.0"
