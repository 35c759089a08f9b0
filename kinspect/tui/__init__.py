"""The TUI: the live screen (Textual), which renders snapshots and dispatches keys.

In: Textual messages (messages.py) posted from background threads by a feed: feed.py's
LiveFeed over the observer, replay_feed.py's ReplayFeed over a recording, or RecordedFeed (one
fixed model, for tests and screenshots). Out: the screen, and the keys (actions.py's one
registry) handed to the console (console.py) and acting.py's workers: a fault on the lab, a
load, a post-mortem, a scenario. Nothing here calls Kafka, ZooKeeper, Docker or a subprocess on
the event loop. The apps are app.py (`kinspect ui`, `demo`), replay_app.py (`replay`) and
lesson_app.py (`learn`); the modules import one another without a cycle (a contract holds it).
"""
