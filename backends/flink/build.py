"""Find Flink's jar and a JDK, and compile the shipped Java worker once into a per-user cache.

Why compile on first use: the worker must be built against the very flink-dist jar the user has
installed (`pip install 'statebench[flink]'`), and shipping class files would pin one Flink
version. The cache key is a hash of the Java sources and the jar's identity, so a new statebench
or a new Flink recompiles, and concurrent first uses (Spark executors) race safely: each compiles
into its own temporary folder and the first atomic rename wins.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from backends.flink.errors import FlinkUnavailableError

DISTRIBUTION = "apache-flink-libraries"
INSTALL_EXTRA = "pip install 'statebench[flink]'"
INSTALL_JDK = (
    "a JDK 17 (javac and java), e.g. `apt-get install openjdk-17-jdk-headless`, "
    "or set JAVA_HOME to one"
)
JAVA_SOURCES = Path(__file__).resolve().parent / "java"
MAIN_CLASS = "statebench.flink.Worker"


@dataclass(frozen=True)
class WorkerBuild:
    """Everything needed to start a worker JVM."""

    java: str
    classpath: str
    flink_jar: Path


def find_flink_jar() -> Path:
    """flink-dist-*.jar inside the installed apache-flink-libraries distribution."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise FlinkUnavailableError(
            f"Flink's jars are not installed (Python distribution '{DISTRIBUTION}' is missing): "
            f"run {INSTALL_EXTRA}"
        ) from None
    pattern = re.compile(r"pyflink/lib/flink-dist-[^/]+\.jar")
    jars = [f for f in dist.files or () if pattern.fullmatch(str(f))]
    for jar in jars:
        path = Path(str(dist.locate_file(jar)))
        if path.is_file():
            return path
    raise FlinkUnavailableError(
        f"'{DISTRIBUTION}' {dist.version} is installed but holds no pyflink/lib/flink-dist-*.jar; "
        f"reinstall it: {INSTALL_EXTRA}"
    )


def find_jdk() -> tuple[str, str]:
    """(javac, java) of a JDK >= 17: JAVA_HOME first, then PATH."""
    candidates = []
    home = os.environ.get("JAVA_HOME")
    if home:
        candidates.append(Path(home) / "bin" / "javac")
    which = shutil.which("javac")
    if which:
        candidates.append(Path(which).resolve())
    for javac in candidates:
        java = javac.parent / "java"
        if javac.is_file() and java.is_file():
            return str(javac), str(java)
    raise FlinkUnavailableError(f"the Flink lanes need {INSTALL_JDK}; no `javac` was found")


def _java_major(javac: str) -> int:
    proc = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=60)
    match = re.search(r"javac (\d+)", proc.stdout + proc.stderr)
    return int(match.group(1)) if match else 0


def _sources() -> list[Path]:
    return sorted(JAVA_SOURCES.rglob("*.java"))


def cache_key(jar: Path) -> str:
    """Hash of every Java source (path and bytes) and the jar's name, size and mtime."""
    digest = hashlib.sha256()
    for src in _sources():
        digest.update(str(src.relative_to(JAVA_SOURCES)).encode())
        digest.update(src.read_bytes())
    stat = jar.stat()
    digest.update(f"{jar.name}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:20]


def cache_root() -> Path:
    """$STATEBENCH_CACHE, else $XDG_CACHE_HOME/statebench, else ~/.cache/statebench."""
    explicit = os.environ.get("STATEBENCH_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "statebench"


def ensure_worker_built() -> WorkerBuild:
    """Compile the worker against the installed jar unless the cache already holds it."""
    jar = find_flink_jar()
    javac, java = find_jdk()
    target = cache_root() / "flink-worker" / cache_key(jar)
    classes = target / "classes"
    if not (classes / "statebench" / "flink" / "Worker.class").is_file():
        major = _java_major(javac)
        if major < 17:
            raise FlinkUnavailableError(
                f"{javac} is JDK {major or 'of unknown version'}; "
                f"the Flink lanes need {INSTALL_JDK}"
            )
        target.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="classes-", dir=target))
        proc = subprocess.run(
            [javac, "-nowarn", "-Xlint:-options", "-encoding", "UTF-8", "-d", str(tmp),
             "-cp", str(jar), *map(str, _sources())],
            capture_output=True, text=True, timeout=600,
        )
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise FlinkUnavailableError(
                f"compiling the Flink worker against {jar.name} failed (is it Flink 2.x?):\n"
                + (proc.stderr or proc.stdout)[-4000:]
            )
        try:
            os.replace(tmp, classes)
        except OSError:  # another process won the race: its classes are identical
            shutil.rmtree(tmp, ignore_errors=True)
    return WorkerBuild(java=java, classpath=f"{classes}{os.pathsep}{jar}", flink_jar=jar)
