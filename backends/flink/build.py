"""Find Flink's jar and a JDK, and compile the shipped Java worker once into a per-user cache.

Why compile on first use: the worker must be built against the very flink-dist jar the user has
installed (`pip install 'statebench[flink]'`), and shipping class files would pin one Flink
version. The cache key is a hash of the Java sources and the jar's identity, so a new statebench
or a new Flink recompiles.

The cache is checked, not trusted: a build is ``classes/`` holding a manifest
(``.statebench-manifest.json``: every class file with its size and SHA-256) that is written
last, so a folder without it, or with a class file deleted or truncated, is rebuilt instead of
failing every run with ClassNotFoundException. A build compiles into an owner-tagged temporary
folder (``backends.tempdirs``) and is renamed into place complete; a broken ``classes/`` is moved
aside first. Builds of one key take a lock (``.build.lock``), so concurrent first uses (Spark
executors) compile once and never swap classes under a JVM that is loading them; a build killed
mid-``javac`` leaves a tagged folder that the next build sweeps.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from backends import tempdirs
from backends.flink.errors import FlinkUnavailableError

DISTRIBUTION = "apache-flink-libraries"
INSTALL_EXTRA = "pip install 'statebench[flink]'"
INSTALL_JDK = (
    "a JDK 17 (javac and java), e.g. `apt-get install openjdk-17-jdk-headless`, "
    "or set JAVA_HOME to one"
)
JAVA_SOURCES = Path(__file__).resolve().parent / "java"
MAIN_CLASS = "statebench.flink.Worker"
#: Written last into a finished build: class file -> [size, sha256].
MANIFEST = ".statebench-manifest.json"
#: Seconds javac gets; a compiler that has not finished by then will not.
JAVAC_TIMEOUT_S = 600.0
#: Legacy ``classes-*`` build folders (older versions, untagged) older than this are leftovers.
_LEGACY_AGE_S = JAVAC_TIMEOUT_S + 60


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
    """The major version ``javac -version`` reports; 0 when it says nothing usable in a minute
    (the caller then names the JDK as of unknown version, in one line)."""
    try:
        proc = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return 0
    match = re.search(r"javac (\d+)", proc.stdout + proc.stderr)
    return int(match.group(1)) if match else 0


def java_sources(folder: Path) -> list[Path]:
    """Every Java source under ``folder``, in a fixed order (javac's arguments, the key)."""
    return sorted(folder.rglob("*.java"))


def sources_digest(folder: Path) -> hashlib._Hash:
    """A sha256 fed every Java source under ``folder`` (its path there and its bytes): the
    part of each compiled program's cache key that its own code makes; the caller adds what
    it compiles against."""
    digest = hashlib.sha256()
    for src in java_sources(folder):
        digest.update(str(src.relative_to(folder)).encode())
        digest.update(src.read_bytes())
    return digest


def cache_key(jar: Path) -> str:
    """Hash of every Java source (path and bytes) and the jar's name, size and mtime."""
    digest = sources_digest(JAVA_SOURCES)
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


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_manifest(classes: Path) -> None:
    """List every class file under ``classes`` with its size and hash (the build's last step)."""
    files = {str(p.relative_to(classes)): [p.stat().st_size, _digest(p)]
             for p in sorted(classes.rglob("*.class"))}
    tmp = classes / (MANIFEST + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump({"files": files}, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, classes / MANIFEST)


def build_problem(classes: Path) -> str | None:
    """Why ``classes`` is not a complete build (None: it is): no manifest, a class file missing,
    of another size or with other bytes than the manifest says."""
    try:
        listed = json.loads((classes / MANIFEST).read_text(encoding="utf-8"))["files"]
        if not isinstance(listed, dict) or not listed:
            return "its manifest lists no class"
    except (OSError, ValueError, KeyError, TypeError):
        return "it has no readable manifest (an interrupted or older build)"
    if MAIN_CLASS.replace(".", "/") + ".class" not in listed:
        return f"its manifest lacks {MAIN_CLASS}"
    for name, entry in listed.items():
        path = classes / name
        try:
            size, digest = entry
            if path.stat().st_size != size or _digest(path) != digest:
                return f"{name} differs from its manifest"
        except (OSError, ValueError, TypeError):
            return f"{name} is missing"
    return None


@contextmanager
def build_lock(target: Path, what: str = "the Flink worker") -> Iterator[None]:
    """One build of ``target`` (``what``, for the error) at a time: other processes wait, then
    find it built."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock: builds race as before
        yield
        return
    target.mkdir(parents=True, exist_ok=True)
    fd = os.open(target / ".build.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + JAVAC_TIMEOUT_S + 60
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise FlinkUnavailableError(
                        f"another process has been building {what} in {target} for "
                        f"over {JAVAC_TIMEOUT_S + 60:.0f} s; remove that folder if it is stuck"
                    ) from None
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)


def _sweep_build_leftovers(target: Path) -> None:
    """Folders of builds that died: tagged ones whose owner is gone, and legacy ``classes-*``
    ones (untagged, from older versions) older than any javac may run."""
    tempdirs.sweep([target])
    for entry in target.glob("classes-*"):
        try:
            if entry.is_dir() and time.time() - entry.stat().st_mtime > _LEGACY_AGE_S:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            continue


def _compile(javac: str, jar: Path, target: Path) -> Path:
    """javac into a fresh owner-tagged folder under ``target``, with its manifest; returned."""
    tmp = Path(tempdirs.make(".statebench-build-", dir=target))
    try:
        proc = subprocess.run(
            [javac, "-nowarn", "-Xlint:-options", "-encoding", "UTF-8", "-d", str(tmp),
             "-cp", str(jar), *map(str, java_sources(JAVA_SOURCES))],
            capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S,
        )
        if proc.returncode != 0:
            raise FlinkUnavailableError(
                f"compiling the Flink worker against {jar.name} failed (is it Flink 2.x?):\n"
                + (proc.stderr or proc.stdout)[-4000:]
            )
        write_manifest(tmp)
    except subprocess.TimeoutExpired:
        tempdirs.remove(tmp)
        raise FlinkUnavailableError(
            f"compiling the Flink worker with {javac} did not finish within "
            f"{JAVAC_TIMEOUT_S:.0f} s (javac was stopped); check the JDK and the machine's load"
        ) from None
    except BaseException:
        tempdirs.remove(tmp)
        raise
    return tmp


def _install(tmp: Path, classes: Path) -> None:
    """Rename the finished build ``tmp`` to ``classes``, moving a broken one aside first."""
    aside = None
    if classes.exists():
        aside = Path(tempdirs.make(".statebench-broken-", dir=classes.parent))
        os.replace(classes, aside / "classes")
    try:
        os.replace(tmp, classes)
    finally:
        tempdirs.forget(tmp)
        if aside is not None:
            tempdirs.remove(aside)


def ensure_worker_built() -> WorkerBuild:
    """Compile the worker against the installed jar unless the cache already holds a complete
    build of it (checked against its manifest; a broken one is rebuilt)."""
    jar = find_flink_jar()
    javac, java = find_jdk()
    target = cache_root() / "flink-worker" / cache_key(jar)
    classes = target / "classes"
    if build_problem(classes) is not None:
        with build_lock(target):
            _sweep_build_leftovers(target)
            if build_problem(classes) is not None:  # another process may have built it meanwhile
                major = _java_major(javac)
                if major < 17:
                    raise FlinkUnavailableError(
                        f"{javac} is JDK {major or 'of unknown version'}; "
                        f"the Flink lanes need {INSTALL_JDK}"
                    )
                _install(_compile(javac, jar, target), classes)
    return WorkerBuild(java=java, classpath=f"{classes}{os.pathsep}{jar}", flink_jar=jar)
