"""Log lines: one per event, key=value, quoted only when needed."""

import io
import logging

from dossier_agent import structured_log


def test_one_line_per_event_with_its_fields():
    stream = io.StringIO()
    structured_log.configure("info", stream=stream)
    logger = logging.getLogger("dossier_agent.test")

    structured_log.log(logger, logging.INFO, "job claimed", job="42", attempt=1, kinds=["inventory"], ok=True)
    structured_log.log(logger, logging.DEBUG, "hidden at info level")
    structured_log.log(logger, logging.WARNING, "heartbeat failed", detail='server said "no"\nthen closed')

    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("ts=")
    assert ' level=info logger=dossier_agent.test event="job claimed" job=42 attempt=1 kinds="[\\"inventory\\"]"' \
        ' ok=true' in lines[0]
    assert 'detail="server said \\"no\\"\\nthen closed"' in lines[1]  # one line, even for multi-line text


def test_values_are_quoted_only_when_they_need_it():
    assert structured_log.format_value("plain-value_1.2") == "plain-value_1.2"
    assert structured_log.format_value("two words") == '"two words"'
    assert structured_log.format_value("") == '""'
    assert structured_log.format_value(None) == "null"
    assert structured_log.format_value("a=b") == '"a=b"'
