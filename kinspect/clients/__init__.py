"""The clients floor: how kinspect connects, below everything that observes or acts.

Quiet kazoo and librdkafka factories, a ZooKeeper session as a context manager, the one parser
of a partition's state znode, and the probe that asks one broker what it believes. The lab
(which acts), the sources (which observe) and the load all build on these and on nothing of
each other.
"""
