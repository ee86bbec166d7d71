"""Passage vectors as files, so a corpus can be encoded by many jobs at once (`cq encode --shard I/N`) and merged
into one dense index (`cq index --dense --vectors DIR`).

The corpus is cut into global chunks of ``chunk`` passages (chunk c: passages c*chunk .. (c+1)*chunk - 1, in corpus
order); shard I of N encodes the chunks c with c % N == I. A vectors directory holds, for each finished chunk:

* ``chunk-000042.npy``: the vectors, float32, one row a passage (numpy's .npy format);
* ``chunk-000042.ids``: the passages' ids, one a line, in the same order.

Both are written to temporary names and renamed, the .npy last: a chunk whose .npy exists is finished. A killed
shard redoes at most its one unfinished chunk when run again; damaged chunk files are encoded again too.

Every shard has its manifest, ``vectors.I-of-N.json``: the corpus fingerprint (its size and the sha256 of its first
and last MiB; not its path, which other machines may mount elsewhere), the encoder (name, source, dim, normalised
or not, DPR's question encoder), the chunk size, I and N, the chunks done, whether the shard finished (then the
corpus' passage and chunk counts), and the cqtools version. Many shards share one directory, the natural use on a
cluster; a shard run with other settings than the manifests already there is refused. ``vectors.I-of-N.lock`` is the
shard's flock: one `cq encode` writes a shard at a time. The manifest also holds each chunk's ``sha256`` (of its
vectors' float32 bytes, row by row), checked when `cq index --dense --vectors` reads the chunk: vector data copied
or swapped under intact ids is refused, not indexed.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass
from typing import Iterable, Iterator

from ..errors import ResourceError
from ..models.roles import ENCODER
from ..registry import option

log = logging.getLogger("cqtools")

FORMAT = "cq-vectors"
VERSION = 1
MIB = 1 << 20
MANIFEST = re.compile(r"^vectors\.(\d+)-of-(\d+)\.json$")
TMP = re.compile(r"^\.chunk-(\d+)\.(?:npy|ids)\.tmp-\d+$")
SETTINGS = ("corpus", "encoder", "chunk", "shards")  # what every shard of one directory shares


@dataclass(frozen=True)
class EncodeSettings:
    """How passages are encoded: `cq encode`'s and `cq index --dense`'s flags (one declaration for both)."""

    encoder: str = option(ENCODER, "Passage encoder for dense vectors: a sentence-transformers model (normalised "
                                   "vectors) or a DPR context encoder such as facebook/dpr-ctx_encoder-multiset-base "
                                   "(CLS vectors, raw inner product); hub id, local dir or offline copy.",
                          env="CQ_MODEL_ENCODER")
    query_encoder: str | None = option(None, "DPR only: the question encoder recorded for `cq retrieve` [default: "
                                             "the context encoder's pair by DPR's naming, e.g. "
                                             "facebook/dpr-question_encoder-multiset-base].")
    batch_size: int = option(128, "Encoding batch size.", min=1)
    chunk: int = option(8192, "Passages per vector file: the corpus is cut into chunks of this many, and shard I/N "
                              "encodes chunks c with c % N == I. All shards of a directory use one size.",
                         min=1, metavar="N")


def manifest_name(shard: int, shards: int) -> str:
    return f"vectors.{shard}-of-{shards}.json"


def chunk_path(vectors_dir: str, c: int, ext: str) -> str:
    return os.path.join(vectors_dir, f"chunk-{c:06d}.{ext}")


def fingerprint(path: str) -> dict:
    """The corpus file's size and the sha256 of its first and last MiB (cheap at any size, and the same wherever it
    is mounted)."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        head = hashlib.sha256(fh.read(MIB)).hexdigest()
        fh.seek(max(0, size - MIB))
        tail = hashlib.sha256(fh.read(MIB)).hexdigest()
    return {"bytes": size, "head_sha256": head, "tail_sha256": tail}


def read_chunk(vectors_dir: str, c: int, dim: int):
    """(ids, vectors) of finished chunk c, or a reason it is damaged (a str)."""
    import numpy as np

    try:
        vectors = np.load(chunk_path(vectors_dir, c, "npy"), mmap_mode="r", allow_pickle=False)
        with open(chunk_path(vectors_dir, c, "ids"), encoding="utf-8") as fh:
            ids = fh.read().split("\n")[:-1]
    except (OSError, ValueError, EOFError) as err:
        return f"unreadable ({str(err).splitlines()[0] if str(err) else type(err).__name__})"
    if vectors.dtype != np.float32 or vectors.ndim != 2 or vectors.shape[1] != dim:
        return f"holds {vectors.dtype} vectors of shape {vectors.shape}, not float32 rows of {dim}"
    if vectors.shape[0] != len(ids) or not ids:
        return f"has {vectors.shape[0]} vectors but {len(ids)} ids"
    return ids, vectors


def vector_sum(vectors) -> str:
    """The sha256 of ``vectors``' float32 bytes in row order (a chunk's checksum in its shard's manifest)."""
    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(vectors, dtype=np.float32).data).hexdigest()


def _write_json(path: str, data: dict) -> None:
    """``data`` as ``path``, replaced whole (outputs.AtomicFile: a temp file beside it, renamed when written)."""
    from ..outputs import AtomicFile

    out = AtomicFile(path)
    out.write(json.dumps(data, indent=1).encode() + b"\n")
    out.commit()


def read_manifests(vectors_dir: str) -> dict[tuple[int, int], dict]:
    """The shard manifests in ``vectors_dir`` by (I, N)."""
    found = {}
    for name in sorted(os.listdir(vectors_dir)) if os.path.isdir(vectors_dir) else []:
        m = MANIFEST.match(name)
        if m:
            try:
                with open(os.path.join(vectors_dir, name)) as fh:
                    data = json.load(fh)
            except (OSError, ValueError) as err:
                raise ResourceError(f"{os.path.join(vectors_dir, name)} is not a readable vectors manifest ({err}); "
                                    f"remove it and rerun that shard's `cq encode`") from None
            found[(int(m.group(1)), int(m.group(2)))] = data
    return found


def difference(a: dict, b: dict) -> str | None:
    """What makes two shard manifests' settings differ (for a one-line error), or None."""
    if a.get("corpus") != b.get("corpus"):
        return "were made from another corpus"
    ea, eb = a.get("encoder") or {}, b.get("encoder") or {}
    if ea.get("encoder") != eb.get("encoder") or ea.get("query_encoder") != eb.get("query_encoder"):
        return f"were made by encoder {ea.get('encoder')}, not {eb.get('encoder')}"
    if ea != eb:
        return f"were made by another build of encoder {ea.get('encoder')} ({ea} vs {eb})"
    if a.get("chunk") != b.get("chunk"):
        return f"have chunks of {a.get('chunk')} passages, not {b.get('chunk')} (--chunk)"
    if a.get("shards") != b.get("shards"):
        return f"are shards of {a.get('shards')}, not {b.get('shards')} (--shard I/N)"
    return None


def _lock(vectors_dir: str, name: str):
    """An flock on the shard's lock file, held while it runs: one writer a shard."""
    fh = open(os.path.join(vectors_dir, name[:-len(".json")] + ".lock"), "a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise ResourceError(f"another `cq encode` is writing this shard into {vectors_dir} ({name}); wait for it "
                            f"to end, or stop it") from None
    return fh


def encode_shard(corpus: str, vectors_dir: str, shard: tuple[int, int], encoder, chunk: int,
                 batch_size: int, desc: str | None = None) -> dict:
    """Encode shard ``shard`` = (I, N) of ``corpus`` into ``vectors_dir`` with ``encoder`` (a
    :class:`~.dense.PassageEncoder`: ``info`` and ``encode_chunk``), skipping chunks finished before; returns the
    shard's manifest. ``desc`` names the passage bar (default ``encode: shard I/N``)."""
    from .. import __version__, progress
    from ..data.formats import iter_corpus
    from ..jsonl import batched

    index, total = shard
    os.makedirs(vectors_dir, exist_ok=True)
    name = manifest_name(index, total)
    mine = {"format": FORMAT, "version": VERSION, "corpus": fingerprint(corpus), "encoder": encoder.info,
            "chunk": chunk, "shards": total, "shard": index}
    _refuse_others(vectors_dir, mine)
    lock = _lock(vectors_dir, name)
    recorded = read_manifests(vectors_dir).get((index, total), {}).get("sha256", {})
    try:
        for stale in os.listdir(vectors_dir):  # a killed run's half-written files of this shard
            m = TMP.match(stale)
            if m and int(m.group(1)) % total == index:
                os.remove(os.path.join(vectors_dir, stale))
        done, sums, passages, chunks, encoded = [], {}, 0, 0, 0
        manifest = {**mine, "chunks_done": done, "sha256": sums, "complete": False, "passages": None, "chunks": None,
                    "cqtools": __version__}
        _write_json(os.path.join(vectors_dir, name), manifest)
        start = time.perf_counter()
        with progress.bar(desc or f"encode: shard {index}/{total}", "passage") as bar:
            for c, group in enumerate(batched(iter_corpus(corpus), chunk)):
                passages, chunks = passages + len(group), c + 1
                if c % total != index:
                    continue
                sums[str(c)] = _finished(vectors_dir, c, group, encoder.info["dim"], recorded.get(str(c)))
                if sums[str(c)] is None:
                    sums[str(c)] = _write_chunk(vectors_dir, c, group,
                                                encoder.encode_chunk(group, batch_size, not bar.disable))
                    encoded += len(group)
                    bar.update(len(group))
                    if bar.disable:
                        log.info("encode: shard %d/%d: chunk %d written (%d passages encoded, %.0f/s)", index,
                                 total, c, encoded, encoded / max(time.perf_counter() - start, 1e-9))
                done.append(c)
                _write_json(os.path.join(vectors_dir, name), manifest)
        manifest |= {"complete": True, "passages": passages, "chunks": chunks}
        _write_json(os.path.join(vectors_dir, name), manifest)
    finally:
        lock.close()
    log.info("encode: shard %d/%d done: its %d chunks are in %s (%d passages encoded by this run)", index, total,
             len(done), vectors_dir, encoded)
    return manifest


def _refuse_others(vectors_dir: str, mine: dict) -> None:
    """Refuse a directory whose manifests have other settings than ``mine``."""
    for (i, n), other in read_manifests(vectors_dir).items():
        why = difference(other, mine)
        if why:
            raise ResourceError(f"the vectors in {vectors_dir} (shard {i}/{n}) {why}; pass another --out, or the "
                                f"same settings as they were made with")


def _finished(vectors_dir: str, c: int, group: list[dict], dim: int, recorded: str | None) -> str | None:
    """The checksum of chunk c when it is on disk, whole, with these passages' ids and the vectors its manifest
    recorded (if it did), else None: a damaged one is encoded again."""
    if not os.path.exists(chunk_path(vectors_dir, c, "npy")):
        return None
    found = read_chunk(vectors_dir, c, dim)
    why = found if isinstance(found, str) else "of other passages" if found[0] != [str(p["id"]) for p in group] \
        else None
    total = None if why else vector_sum(found[1])
    if recorded and total and total != recorded:
        why = "not the vectors its manifest recorded (sha256)"
    if why:
        log.warning("encode: chunk %d in %s is %s; encoding it again", c, vectors_dir, why)
        return None
    return total


def _write_chunk(vectors_dir: str, c: int, group: list[dict], vectors) -> str:
    """Chunk c's ids and vectors, each to a temporary name, then renamed: the .npy last; returns their checksum."""
    import numpy as np

    tmp = {ext: os.path.join(vectors_dir, f".chunk-{c:06d}.{ext}.tmp-{os.getpid()}") for ext in ("ids", "npy")}
    with open(tmp["ids"], "w", encoding="utf-8") as fh:
        fh.writelines(f"{p['id']}\n" for p in group)
        fh.flush()
        os.fsync(fh.fileno())
    with open(tmp["npy"], "wb") as fh:
        np.save(fh, vectors, allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp["ids"], chunk_path(vectors_dir, c, "ids"))
    os.replace(tmp["npy"], chunk_path(vectors_dir, c, "npy"))
    return vector_sum(vectors)


def _same_model(given: str, recorded: str | None) -> bool:
    """Whether the model name ``given`` is the one recorded (a local directory: by its absolute path too)."""
    if recorded is None or given == recorded:
        return given == recorded
    return os.path.exists(given) and os.path.abspath(given) == os.path.abspath(recorded)


class VectorSet:
    """The vector files in ``vectors_dir`` as the dense vectors of ``corpus``, checked to be one run's (one corpus,
    encoder, chunk size and N) and every chunk of it: else a one-line error naming the shard to run again."""

    def __init__(self, vectors_dir: str, corpus: str):
        self.dir, self.corpus = vectors_dir, corpus
        manifests = read_manifests(vectors_dir)
        if not manifests:
            raise ResourceError(f"no vectors in {vectors_dir} (no vectors.I-of-N.json); encode the corpus into it "
                                f"first: `cq encode --corpus {corpus} --out {vectors_dir} --shard I/N`")
        (fi, fn), first = next(iter(manifests.items()))
        for (i, n), other in manifests.items():
            why = difference(other, first)
            if why:
                raise ResourceError(f"the vectors in {vectors_dir} are not of one run: shard {i}/{n}'s {why} (shard "
                                    f"{fi}/{fn}'s); encode every shard with the same settings, into a directory of "
                                    f"their own")
        self.info, self.chunk, self.shards = first["encoder"], first["chunk"], first["shards"]
        if first["corpus"] != fingerprint(corpus):
            raise ResourceError(f"the vectors in {vectors_dir} were made from another corpus than {corpus} "
                                f"({first['corpus']['bytes']} bytes, not {os.path.getsize(corpus)}, or other "
                                f"contents); pass the corpus they were made from, or encode this one with `cq encode "
                                f"--corpus {corpus}` into another directory")
        absent = [i for i in range(self.shards) if (i, self.shards) not in manifests]
        if absent:
            many = len(absent) > 1
            raise ResourceError(f"shard{'s' if many else ''} {', '.join(f'{i}/{self.shards}' for i in absent)} of "
                                f"{vectors_dir} {'have' if many else 'has'} not been encoded: run "
                                f"`{self.rerun(absent[0])}`")
        counts = {(m["chunks"], m["passages"]) for m in manifests.values() if m.get("complete")}
        if not counts:
            raise ResourceError(f"no shard of {vectors_dir} has finished: run each again, e.g. `{self.rerun(0)}`")
        if len(counts) > 1:
            raise ResourceError(f"the shards in {vectors_dir} read corpora of different lengths ({sorted(counts)} "
                                f"chunks, passages): the corpus changed while they ran; encode it again into a new "
                                f"directory")
        self.count = counts.pop()[0]
        self.sums = {int(c): total for m in manifests.values() for c, total in (m.get("sha256") or {}).items()}
        self._check_files()

    def rerun(self, shard: int) -> str:
        """The `cq encode` command that (re)makes shard ``shard``'s chunks."""
        dpr = f" --query-encoder {self.info['query_encoder']}" if self.info.get("query_encoder") else ""
        return (f"cq encode --corpus {self.corpus} --out {self.dir} --shard {shard}/{self.shards} "
                f"--encoder {self.info['encoder']}{dpr} --chunk {self.chunk}")

    def _check_files(self) -> None:
        for shard in range(self.shards):
            missing = [c for c in range(shard, self.count, self.shards)
                       if not os.path.exists(chunk_path(self.dir, c, "npy"))]
            if missing:
                listed = ", ".join(map(str, missing[:10])) + (f" and {len(missing) - 10} more" if len(missing) > 10
                                                              else "")
                raise ResourceError(f"shard {shard}/{self.shards} in {self.dir} is missing chunk"
                                    f"{'s' if len(missing) > 1 else ''} {listed}: rerun `{self.rerun(shard)}`")
        extra = sorted(n for n in os.listdir(self.dir) if re.match(r"^chunk-(\d+)\.npy$", n)
                       and int(n[6:-4]) >= self.count)
        if extra:
            raise ResourceError(f"{self.dir} holds {extra[0]}, beyond the corpus' {self.count} chunks: it is of "
                                f"another run; encode into a directory of its own")

    def check(self, encoder: str | None, query_encoder: str | None) -> None:
        """Refuse vectors of another encoder than the one asked for (None: any)."""
        made = self.info["encoder"]
        if encoder and not _same_model(encoder, made):
            raise ResourceError(f"the vectors in {self.dir} were made by encoder {made}, not {encoder}; pass "
                                f"--encoder {made}, or encode with {encoder} (`cq encode --encoder {encoder}`)")
        if query_encoder and not _same_model(query_encoder, self.info.get("query_encoder")):
            raise ResourceError(f"the vectors in {self.dir} were made with question encoder "
                                f"{self.info.get('query_encoder') or 'none (not DPR)'}, not {query_encoder}; pass "
                                f"the --query-encoder they were made with, or none")

    def _read(self, c: int):
        found = read_chunk(self.dir, c, self.info["dim"])
        if isinstance(found, str):
            raise ResourceError(f"{chunk_path(self.dir, c, 'npy')} {found}: it is damaged; rerun "
                                f"`{self.rerun(c % self.shards)}` (it encodes damaged chunks again)")
        return found

    def write_docid(self, passages: Iterable[dict], path: str) -> int:
        """Write the corpus ids, one a line, to ``path`` once each chunk's ids are checked to be its passages'
        (in order); returns the passage count."""
        from ..jsonl import batched

        count = chunks = 0
        with open(path, "w", encoding="utf-8") as fh:
            for c, group in enumerate(batched(passages, self.chunk)):
                ids = [str(p["id"]) for p in group]
                if c >= self.count or self._read(c)[0] != ids:
                    raise ResourceError(f"chunk {c} of the vectors in {self.dir} is not of the passages of "
                                        f"{self.corpus} at {c * self.chunk}..: made from another version of it? "
                                        f"rerun `{self.rerun(c % self.shards)}` (it encodes such chunks again)")
                fh.writelines(f"{i}\n" for i in ids)
                count, chunks = count + len(ids), c + 1
        if chunks != self.count:
            raise ResourceError(f"{self.corpus} has {chunks} chunks of {self.chunk} passages but the vectors in "
                                f"{self.dir} {self.count}: they were made from another version of it")
        return count

    def chunks(self) -> Iterator:
        """The vectors, chunk by chunk in corpus order (float32 arrays), read from the files at each call."""
        import numpy as np

        if len(self.sums) < self.count:
            log.warning("index: %d of the %d chunks in %s have no checksum (encoded by an older cq encode): their "
                        "vectors are not checked", self.count - len(self.sums), self.count, self.dir)
        for c in range(self.count):
            vectors = np.ascontiguousarray(self._read(c)[1])
            if c in self.sums and vector_sum(vectors) != self.sums[c]:
                raise ResourceError(f"{chunk_path(self.dir, c, 'npy')} holds other vectors than `cq encode` wrote "
                                    f"there (its sha256 differs from the manifest's: copied or swapped?); rerun "
                                    f"`{self.rerun(c % self.shards)}` (it encodes such chunks again)")
            yield vectors
