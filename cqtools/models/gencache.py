"""A persistent cache of greedy generations, shared by processes (opt-in: ``CQ_GEN_CACHE=FILE``).

Cells of an experiment grid send many of the same prompts to the same model: REFUEL's round trip
starts with the plain reading, its verification reads what the round trip read, the Tree of
Clarifications expands its root with RAC's prompt. With ``CQ_GEN_CACHE`` set to a file (SQLite),
:class:`cqtools.models.generator.LocalGenerator` looks each prompt up before generating and stores what it
generates, so a prompt one process already answered costs nothing in the next.

Exactness: only greedy generation of each input alone (the default; padded batches are never cached,
their output depends on the batch) is cached, under a key of everything that decides the text: the
model (name, resolved path, and each weight, config, tokenizer and code file's size and
modification time, so a retrained model in the same directory misses), its kind, device type, dtype
and quantization, the torch, transformers and tokenizers versions, a hash of the code that turns a
prompt into text (generator.py, runtime.py, cutting.py, batching.py), the prompt's token ids (after the
chat template and any input cut), ``max_new_tokens`` and the stop strings.
Records are byte-identical with and without the cache. The cache assumes one machine's kernels: a
file shared by machines whose CPUs or GPUs compute differently could serve one's text to the other;
give each kind of machine its own file. Deleting the file is always safe.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import sqlite3

from .runtime import WEIGHT_SUFFIXES

log = logging.getLogger("cqtools")

ENV = "CQ_GEN_CACHE"
# weights, and the config, tokenizer and remote-code files beside them
_WEIGHTS = WEIGHT_SUFFIXES + (".json", ".model", ".txt", ".tiktoken", ".py")
# the code that turns a prompt into text: a change to any of these files is another key
_CODE = ("generator.py", "runtime.py", "cutting.py", "batching.py")
_STATS: dict[str, list[int]] = {}
_REPORTS: set[str] = set()  # CQ_GEN_CACHE_REPORT files of the configurations that opened a cache


def weights_fingerprint(path: str) -> list:
    """(name, size, mtime_ns) of the model's weight, config and tokenizer files under ``path``."""
    if os.path.isfile(path):
        st = os.stat(path)
        return [[os.path.basename(path), st.st_size, st.st_mtime_ns]]
    out = []
    for root, _, files in os.walk(path):
        for name in sorted(files):
            if name.endswith(_WEIGHTS):
                st = os.stat(os.path.join(root, name))
                out.append([os.path.relpath(os.path.join(root, name), path), st.st_size, st.st_mtime_ns])
    return sorted(out)


def code_fingerprint() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256()
    for name in _CODE:
        with open(os.path.join(here, name), "rb") as fh:
            digest.update(fh.read())
    return digest.hexdigest()[:16]


class GenerationCache:
    """Generations of one loaded model, keyed by prompt ids, length and stop strings. A file that
    cannot be opened is a one-line error; one that fails later is warned about once and left alone
    (generation goes on without it)."""

    def __init__(self, file: str, model_key: dict):
        from ..errors import ResourceError

        self.file = os.path.abspath(file)
        self.model_key = json.dumps(model_key, sort_keys=True)
        self.broken = False
        try:
            folder = os.path.dirname(self.file)
            if folder:
                os.makedirs(folder, exist_ok=True)
            self.db = sqlite3.connect(self.file, timeout=120, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")  # a cache: a lost last write costs one generation
            self.db.execute("CREATE TABLE IF NOT EXISTS generation (key TEXT PRIMARY KEY, text TEXT NOT NULL)")
        except (OSError, sqlite3.Error) as err:
            raise ResourceError(f"{ENV}={file}: cannot use it as a generation cache ({err}); point it at a "
                                f"writable file on local disk, or unset it") from None
        self.stats = _STATS.setdefault(self.file, [0, 0])  # hits, stored

    def _failed(self, err: Exception) -> None:
        if not self.broken:
            log.warning("%s=%s failed (%s); going on without the generation cache", ENV, self.file, err)
        self.broken = True

    def key(self, ids: list[int], max_new_tokens: int, stop: list[str] | None, sampling: dict | None = None) -> str:
        """The entry of one generation; ``sampling`` (temperature, top_p, seed) only when it samples, so
        greedy entries keep their keys."""
        item = [self.model_key, list(ids), int(max_new_tokens), sorted(set(stop or ()))]
        payload = json.dumps(item + [sorted(sampling.items())] if sampling else item)
        return hashlib.sha256(payload.encode()).hexdigest()

    def get(self, keys: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        if self.broken:
            return found
        try:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                rows = self.db.execute(
                    f"SELECT key, text FROM generation WHERE key IN ({','.join('?' * len(chunk))})", chunk).fetchall()
                found.update(rows)
        except sqlite3.Error as err:
            self._failed(err)
            return {}
        self.stats[0] += len(found)
        return found

    def put(self, key: str, text: str) -> None:
        if self.broken:
            return
        try:
            self.db.execute("INSERT OR REPLACE INTO generation (key, text) VALUES (?, ?)", (key, text))
        except sqlite3.Error as err:
            self._failed(err)
            return
        self.stats[1] += 1


def open_cache(name: str, path: str, info: dict, config) -> GenerationCache | None:
    """The cache ``config`` names (``$CQ_GEN_CACHE``) for a model loaded from ``path`` as ``info`` says, or
    None when it names none or the model runs padded batches."""
    file = config.gen_cache
    if not file or info.get("batching") != "per-item":
        return None
    if config.gen_cache_report:
        _REPORTS.add(config.gen_cache_report)
    import tokenizers
    import torch
    import transformers

    key = {"model": name, "path": os.path.abspath(path), "files": weights_fingerprint(path), "kind": info.get("kind"),
           "device": str(info.get("device", "")).split(":")[0], "dtype": info.get("dtype"),
           "quantize": info.get("quantize"), "revision": info.get("revision"), "code": code_fingerprint(),
           "torch": torch.__version__, "transformers": transformers.__version__, "tokenizers": tokenizers.__version__}
    return GenerationCache(file, key)


@atexit.register
def _report() -> None:
    """Say what the cache served; with ``CQ_GEN_CACHE_REPORT=FILE`` (make compare's stages) also add
    the counts to FILE ({"hits", "added"}), so a cell's wall time can say it read generations."""
    for file, (hits, stored) in _STATS.items():
        if hits or stored:
            log.info("generation cache %s: %d generations read from it, %d added", file, hits, stored)
    for report in sorted(_REPORTS) if _STATS else ():
        try:
            counts = {}
            if os.path.exists(report):
                with open(report) as fh:
                    counts = json.load(fh)
            counts = {"hits": counts.get("hits", 0) + sum(h for h, _ in _STATS.values()),
                      "added": counts.get("added", 0) + sum(a for _, a in _STATS.values())}
            with open(report, "w") as fh:
                json.dump(counts, fh)
        except (OSError, ValueError) as err:
            log.warning("CQ_GEN_CACHE_REPORT=%s: %s", report, err)
