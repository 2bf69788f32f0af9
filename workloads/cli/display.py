"""One line for an error that arrives as many: a Flink command's Java stack, a Spark task's.

Why: a failed command in a Flink lane's worker carries the whole Java stack (70 lines for a
checkpoint folder that became unwritable), and its first line is Flink's outermost wrapper
("Could not flush to file and close the file system output stream ...") rather than the cause.
The cause is the deepest ``Caused by:``; when it is a file that could not be opened, the folder
is what the user can act on. The full text stays available behind ``--verbose``.
"""

from __future__ import annotations

import os
import re

_CAUSE = re.compile(r"^Caused by: (?P<type>[\w.$]+)(?::\s*(?P<msg>.*))?$")
_FILE = re.compile(r"^(?P<path>/.*?) \((?P<why>[^()]*)\)$")


def _short_type(java_type: str) -> str:
    return java_type.rsplit(".", 1)[-1]


def flink_summary(text: str) -> str:
    """The one line of a Flink worker error: its root cause, and the folder when the cause is
    a file that could not be written or opened."""
    lines = [line.strip() for line in text.strip().splitlines()]
    first = lines[0] if lines else "unknown error"
    causes = [m for m in (_CAUSE.match(line) for line in lines) if m is not None]
    if not causes:
        return first
    root = causes[-1]
    message = (root["msg"] or "").strip()
    found = _FILE.match(message)
    if found is not None:
        folder = os.path.dirname(found["path"])
        return f"Flink could not write into {folder} ({found['why']})"
    return f"Flink failed: {_short_type(root['type'])}" + (f": {message}" if message else "")
