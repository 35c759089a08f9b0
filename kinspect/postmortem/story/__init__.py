"""The story a post-mortem tells: the report's values, the merged timeline, the lanes and the
chart, the consumer group's side, and report.json/report.md.

In: the matching's results and the evidence's events. Out: `Report`, written as report.json
(the schema the TUI's report screen and `replay` read), report.md and timeline.png."""
