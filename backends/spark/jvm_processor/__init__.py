"""The spark-tws processor as a JVM ``StatefulProcessor`` (``java/statebench/spark``), compiled
on first use against the Spark jars pyspark ships and loaded into the running session's JVM.

Why it exists: the throughput mode (``backends.spark.throughput``) runs it beside the Python
processor, on the same staged files and the same session, to say what share of a record's cost
is the Python worker's (rows shipped to it and back, its code, one protobuf round trip to the
JVM's state server per state call); the JVM processor calls the state store directly.

Why compile on first use, like the Flink worker (``backends.flink.build``): it must be built
against the very Spark jars installed (shipping class files would pin one Spark version). The
build is cached per user under a key hashing the Java sources and the jars' names and sizes;
it is compiled in an owner-tagged temporary folder and its jar renamed into place complete (a
cache folder without the jar is simply rebuilt), one build at a time per key (a file lock).

How it loads into a session that is already running: the jar is added to the SparkContext
(``addJar``: executors load it for their tasks, which deserialize the processor) and loaded on
the driver by a ``URLClassLoader`` of its own, whose ``ThroughputQuery`` instance py4j then
calls; ``ThroughputQuery.start`` makes that loader the context class loader of the thread that
creates the query, whose execution thread inherits it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backends import tempdirs

JAVA_SOURCES = Path(__file__).resolve().parent / "java"
ENTRY_CLASS = "statebench.spark.ThroughputQuery"
JAR_NAME = "statebench-spark-processor.jar"
JAVAC_TIMEOUT_S = 600.0
INSTALL_JDK = ("a JDK 17 (javac), e.g. `apt-get install openjdk-17-jdk-headless`, or set "
               "JAVA_HOME to one")


def spark_jars() -> Path:
    """pyspark's ``jars`` folder (Spark's own jars, what the session's JVM runs)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


def find_javac() -> str | None:
    """A ``javac``: JAVA_HOME's first, then PATH's."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def jvm_problem() -> str | None:
    """Why the JVM processor cannot be built here (None: it can), in one line."""
    try:
        jars = spark_jars()
    except ImportError as exc:
        return f"the JVM processor needs pyspark: {exc}"
    if not any(jars.glob("spark-sql_*.jar")):
        return f"the JVM processor needs Spark's jars; {jars} holds no spark-sql_*.jar"
    if find_javac() is None:
        return f"the JVM processor needs {INSTALL_JDK}; no `javac` was found"
    return None


def cache_key(jars: Path) -> str:
    """Hash of every Java source (path and bytes) and of Spark's jars (names and sizes)."""
    from backends.flink.build import sources_digest

    digest = sources_digest(JAVA_SOURCES)
    for jar in sorted(jars.glob("*.jar")):
        digest.update(f"{jar.name}|{jar.stat().st_size}".encode())
    return digest.hexdigest()[:20]


def ensure_built() -> Path:
    """The processor's jar, compiled unless the cache holds it; raises ``RuntimeError`` with
    javac's own message when it does not compile."""
    from backends.flink.build import build_lock, cache_root, java_sources

    problem = jvm_problem()
    if problem is not None:
        raise RuntimeError(problem)
    jars = spark_jars()
    target = cache_root() / "spark-jvm-processor" / cache_key(jars)
    jar = target / JAR_NAME
    if jar.is_file():
        return jar
    with build_lock(target, "the Spark JVM processor"):
        tempdirs.sweep([target])
        if jar.is_file():  # another process built it meanwhile
            return jar
        tmp = Path(tempdirs.make(".statebench-build-", dir=target))
        try:
            classes = tmp / "classes"
            classes.mkdir()
            javac = find_javac()
            assert javac is not None  # jvm_problem said so
            proc = subprocess.run(
                [javac, "-nowarn", "-Xlint:-options", "-encoding", "UTF-8", "--release", "17",
                 "-d", str(classes), "-cp", str(jars / "*"), *map(str, java_sources(JAVA_SOURCES))],
                capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S)
            if proc.returncode != 0:
                raise RuntimeError("compiling the Spark JVM processor failed:\n"
                                   + (proc.stderr or proc.stdout)[-4000:])
            built = tmp / JAR_NAME
            with zipfile.ZipFile(built, "w", zipfile.ZIP_DEFLATED) as out:
                for path in sorted(classes.rglob("*.class")):
                    out.write(path, str(path.relative_to(classes)))
            os.replace(built, jar)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"compiling the Spark JVM processor did not finish within "
                               f"{JAVAC_TIMEOUT_S:.0f} s") from None
        finally:
            tempdirs.remove(tmp)
    return jar


@dataclass
class JvmProcessor:
    """The processor's query starter, loaded into one session's JVM."""

    starter: Any  # a py4j JavaObject: statebench.spark.ThroughputQuery
    jar: Path

    @classmethod
    def load(cls, spark: Any) -> JvmProcessor:
        """Build (or find) the jar and load it into ``spark``'s JVM (module docstring)."""
        jar = ensure_built()
        sc = spark.sparkContext
        jvm, gateway = sc._jvm, sc._gateway
        sc._jsc.sc().addJar(str(jar))
        urls = gateway.new_array(jvm.java.net.URL, 1)
        urls[0] = jvm.java.io.File(str(jar)).toURI().toURL()
        parent = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        loader = jvm.java.net.URLClassLoader(urls, parent)
        klass = loader.loadClass(ENTRY_CLASS)
        ctor = klass.getDeclaredConstructor(gateway.new_array(jvm.java.lang.Class, 0))
        return cls(ctor.newInstance(gateway.new_array(jvm.java.lang.Object, 0)), jar)

    def start(self, spark: Any, input_dir: Path, schema: Any, checkpoint: Path, name: str,
              processor: Any, extra_reads: int) -> Any:
        """The query over ``input_dir`` (one file per batch) with the JVM processor doing what
        ``processor`` (``backends.spark.tws.ProcessorSettings``) says; a ``StreamingQuery``."""
        from pyspark.sql.streaming import StreamingQuery

        from backends.spark.throughput import spark_ddl

        codes = ",".join(f"{n}={c}" for n, c in processor.op_codes)
        jquery = self.starter.start(
            spark._jsparkSession, str(input_dir), spark_ddl(schema), str(checkpoint), name,
            processor.value_type, ",".join(processor.state_types), codes,
            int(processor.ttl_ms or 0), int(extra_reads))
        return StreamingQuery(jquery)
