"""Lessons: guided runs of the scenario catalogue on the live screen (kinspect learn)."""
