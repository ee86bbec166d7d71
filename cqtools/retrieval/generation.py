"""A ``cq index`` build's identity, so a searcher never serves one build's ranking with another
build's passages (a ``cq index --overwrite`` swaps the directory while a retrieve opens its parts).

Each build draws a random generation id. It is written into every half of the index:

* the passage store (``meta`` table: ``generation``, and ``lucene``: the id Lucene itself gave the
  commit of the Lucene index built with it, read back from the built index);
* the dense part (``dense/generation``, read through one open handle of the ``dense`` directory
  together with its ``index`` and ``docid`` files, so the three are one build);
* the manifest (for people; searches never trust it, as it is read apart from the parts).

At search time the halves, once open, are compared by these ids: contents (ids, counts) can be the
same in two builds of a corpus whose texts were edited in place, an identity cannot.
Indexes built before the ids existed have none and keep the older content checks.
"""
from __future__ import annotations

import os
import uuid

FILE = "generation"


def new() -> str:
    return uuid.uuid4().hex


def lucene_commit_id(reader) -> str | None:
    """The random id Lucene gave the commit an open DirectoryReader reads (None if unknown)."""
    from . import jvm

    try:
        infos = jvm.cast("org.apache.lucene.index.StandardDirectoryReader", reader).getSegmentInfos()
        raw = infos.getId()
    except Exception:  # noqa: BLE001 - a reader of another kind, or a Lucene without commit ids
        return None
    if raw is None:
        return None
    return bytes(b & 0xFF for b in raw).hex()


def write_dense(dense_dir: str, generation: str) -> None:
    with open(os.path.join(dense_dir, FILE), "w") as fh:
        fh.write(generation + "\n")


class DenseFiles:
    """The files of one ``dense`` directory, opened through one handle of the directory, so a rename
    of the index directory in between cannot give them from two builds."""

    def __init__(self, dense_dir: str):
        self.dir_fd = os.open(dense_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))

    def text(self, name: str) -> str | None:
        try:
            fd = os.open(name, os.O_RDONLY, dir_fd=self.dir_fd)
        except FileNotFoundError:
            return None
        with open(fd, encoding="utf-8") as fh:
            return fh.read()

    def read_index(self, name: str = "index"):
        """The faiss index, memory-mapped through this handle where faiss can (:func:`.faiss_index.open_index`:
        the mapping outlives the handle and the directory's swap), else read whole."""
        import faiss

        from .faiss_index import open_index

        fd = os.open(name, os.O_RDONLY, dir_fd=self.dir_fd)
        try:
            proc = f"/proc/self/fd/{fd}"
            if os.path.exists(proc):
                return open_index(proc)
            with open(fd, "rb", closefd=False) as fh:  # no /proc: read the bytes through the handle
                import numpy as np

                return faiss.deserialize_index(np.frombuffer(fh.read(), dtype="uint8"))
        finally:
            os.close(fd)

    def close(self) -> None:
        os.close(self.dir_fd)


def mismatch(store, lucene_id: str | None = None, dense_id: str | None = None, dense: bool = False) -> str | None:
    """Why open parts are of different builds by their ids, or None (also when the store has no ids:
    an index from before they existed)."""
    meta = store.meta() if hasattr(store, "meta") else {}
    if not meta.get("generation"):
        return None
    if lucene_id is not None and meta.get("lucene") and lucene_id != meta["lucene"]:
        return f"the Lucene index is commit {lucene_id}, the passage store was built with commit {meta['lucene']}"
    if dense and dense_id != meta["generation"]:
        return f"the dense index is build {dense_id or 'unknown'}, the passage store build {meta['generation']}"
    return None
