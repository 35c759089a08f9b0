"""Lessons: guided runs of the scenario catalogue on the live screen (kinspect learn).

In: the lesson files (catalog/, one TOML file each, validated whole on load: lesson_catalog.py,
lesson_values.py), the learner's language (lang.py, words.py) and what happened on the screen.
Out: a `Flow` (flow.py): where a lesson is, as a value the TUI's lesson panel renders; and the
learner's progress (lesson_progress.py). No Textual here: the screen is the TUI's.
"""
