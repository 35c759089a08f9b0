"""Scenarios: the classic data-loss experiments as data, and the runner that replays them.

In: a scenario (spec.py: lab settings, a topic, a load, a fault plan and what should happen;
catalog.py holds the built-in ones) and a lab of a platform (platform.py). Out: a judged result
(scenario_run.py: reset, load, break with plan.py, heal, verify, post-mortem, and the [expect]
conditions read from measured.py and probes.py), as a terminal table or the docs' matrix
(table.py); scenario_process.py runs one as its own process for a screen.
"""
