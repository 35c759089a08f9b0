"""The sources observe: what a cluster says, turned into the model's snapshots and events.

In: the clients' sessions (ZooKeeper read in bulk and watched, AdminClient polls and their
probes, each broker's own claims) and recordings on disk. Out: `ClusterSnapshot`s and `Event`s
(observer.py assembles them from zk_watch.py and zk_tables.py, admin.py and probes/, configs.py,
hidden.py and claims.py), the same as Prometheus metrics (metrics.py), and a session recorded
(recording.py) and read back frame by frame (playback.py). Nothing here acts on a cluster: the
lab does, and the two do not import each other.
"""
