"""Running a Flink job's own JVM and reading its report (the real DataStream job and the SQL
job): one program per call, its report the last JSON line it prints, its failure the last
line it tags on stderr. One place, so both jobs fail and time out the same way."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from backends import tempdirs
from backends.flink.errors import FlinkWorkerError
from backends.flink.worker import die_with_parent

#: How much of a failed job's stderr (its stack trace) is kept with the error.
STDERR_NOTE_CHARS = 8000


def last_json(stdout: str) -> dict[str, Any] | None:
    """The last line of ``stdout`` that starts a JSON object, parsed (None: none, or broken)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def run_job_jvm(cmd: list[str], local: Path, timeout_s: float, *, timed_out: str,
                failed: str, tag: str) -> dict[str, Any]:
    """Run ``cmd`` (a job's JVM) and return its report; ``local`` (the job's temporary folder)
    is removed afterwards. Errors are FlinkWorkerError: ``timed_out`` when it ran over
    ``timeout_s`` (it is stopped), else ``failed`` with the exit status and the last stderr
    line starting with ``tag`` (the job's own account of why), or stderr's tail."""
    try:  # the JVM dies with this process, as the lanes' workers do (kill -9 of statebench
        # left the SQL job's JVM running, writing into folders nobody would remove)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                              preexec_fn=die_with_parent())
    except subprocess.TimeoutExpired:
        raise FlinkWorkerError(timed_out) from None
    finally:
        tempdirs.remove(local)
    report = last_json(proc.stdout) if proc.returncode == 0 else None
    if report is None:
        lines = [x for x in proc.stderr.splitlines() if x.startswith(tag)]
        why = lines[-1] if lines else proc.stderr[-2000:].strip()
        error = FlinkWorkerError(f"{failed} failed with exit status {proc.returncode}: {why}")
        # the one line stays the message; the JVM's own stack goes with the exception (shown
        # by --verbose and in test logs), where a rare failure can be told from another
        error.add_note(proc.stderr[-STDERR_NOTE_CHARS:].strip())
        raise error
    return report
