"""Passage store of a ``cq index``: SQLite, written in the same pass over the corpus as the
Lucene input, read by every searcher to turn hit ids into ``{id, title, text}``.

Why: Anserini's searchers load each hit's stored Lucene document inside Java (~50-100 us a hit),
and fetching it through jnius costs more again; at k=100 that dominated BM25 time (measured:
9 s for 796 queries). A keyed SQLite read is a few microseconds a row and keeps memory flat.
Table ``lucene`` maps Lucene's internal document numbers to passage ids (filled after indexing).
"""
from __future__ import annotations

import os
import sqlite3
from collections import OrderedDict
from typing import Iterable, Iterator

from ..errors import ResourceError

NAME = "docstore.sqlite"


class DocStoreWriter:
    def __init__(self, path: str, generation: str | None = None):
        if os.path.exists(path):
            os.remove(path)
        self.db = sqlite3.connect(path)
        self.db.execute("PRAGMA journal_mode=OFF")
        self.db.execute("PRAGMA synchronous=OFF")
        self.db.execute("CREATE TABLE docs (id TEXT PRIMARY KEY, title TEXT, text TEXT) WITHOUT ROWID")
        self.db.execute("CREATE TABLE lucene (docnum INTEGER PRIMARY KEY, id TEXT)")
        self.db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")  # the build's ids: .generation
        if generation:
            self.set_meta("generation", generation)

    def set_meta(self, key: str, value: str | None) -> None:
        if value is not None:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def tee(self, passages: Iterable[dict], chunk: int = 10_000) -> Iterator[dict]:
        """Yield the passages while storing them (one corpus pass feeds both indexes)."""
        rows, self.stored = [], 0
        for passage in passages:
            rows.append((passage["id"], passage.get("title", ""), passage["text"]))
            if len(rows) >= chunk:
                self._insert(rows)
                rows = []
            yield passage
        self._insert(rows)

    def _insert(self, rows) -> None:
        from ..errors import InputError

        before = self.db.total_changes
        try:
            self.db.executemany("INSERT INTO docs VALUES (?, ?, ?)", rows)
        except sqlite3.IntegrityError:
            at = self.db.total_changes - before  # the rows before the failing one went in
            raise InputError(f"passage id {rows[at][0]!r} appears twice in the corpus (again at passage "
                             f"{self.stored + at + 1:,}); ids must be unique: remove or rename one, then index "
                             f"again") from None
        self.stored += len(rows)

    def add_docnums(self, pairs: Iterable[tuple[int, str]]) -> None:
        self.db.executemany("INSERT INTO lucene VALUES (?, ?)", pairs)

    def close(self) -> None:
        self.db.commit()
        self.db.close()


class StoredPassages:
    """Passages by id from a passage store: what hits that carry ids only (dense ones) are filled from."""

    def __init__(self, store):
        self.docstore = store

    def docs(self, ids: list[str]) -> dict[str, dict]:
        return self.docstore.by_ids(ids)


class _Rows(list):
    def fetchone(self):
        return self[0] if self else None


class _Checked:
    """A read-only connection whose damaged file (not a database, a malformed page) is a one-line error naming
    it: ``execute`` returns the query's rows (every query here reads at most 900)."""

    def __init__(self, path: str, db: sqlite3.Connection):
        self.path, self.db = path, db

    def execute(self, sql: str, params=()) -> _Rows:
        try:
            return _Rows(self.db.execute(sql, params).fetchall())
        except sqlite3.OperationalError:  # a missing table (an older store), a lock: the caller's to handle
            raise
        except sqlite3.DatabaseError as err:
            raise ResourceError(f"{self.path}: the passage store is damaged ({err}); build the index again "
                                "(cq index)") from None

    def close(self) -> None:
        self.db.close()


class DocStore:
    """``cache`` passages (by Lucene document number) stay in memory after their first read, the
    most recently used kept: at k=100 a batch of 32 questions asks for ~3,000 passages, and on a
    small corpus most of them were read by an earlier batch (measured on the 9.5k corpus: SQLite
    reads were 30% of `cq retrieve`'s time for 10k questions). Memory is bounded by ``cache``, not
    by the input. Until the cache first fills (on a corpus that fits: never), reads skip the
    recency bookkeeping (measured: 0.5 s of 10k questions at k=100)."""

    def __init__(self, path: str, cache: int = 65_536):
        self.db = _Checked(path, sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False))
        self._cache: OrderedDict[int, dict] = OrderedDict()
        self._cache_size = cache
        self._evicting = False  # until the cache first fills, nothing is evicted and no order is kept

    def close(self) -> None:
        self.db.close()

    def meta(self) -> dict[str, str]:
        """The build's ids (see :mod:`.generation`); empty for a store built before they existed."""
        try:
            return dict(self.db.execute("SELECT key, value FROM meta"))
        except sqlite3.OperationalError:
            return {}

    def by_ids(self, ids: list[str]) -> dict[str, dict]:
        out = {}
        for start in range(0, len(ids), 900):  # SQLite's bound-parameter limit
            part = ids[start:start + 900]
            marks = ",".join("?" * len(part))
            for docid, title, text in self.db.execute(f"SELECT id, title, text FROM docs WHERE id IN ({marks})", part):
                out[docid] = {"id": docid, "title": title, "text": text}
        return out

    def documents(self) -> int:
        """How many Lucene document numbers the store maps."""
        return self.db.execute("SELECT COUNT(*) FROM lucene").fetchone()[0]

    def ids_of(self, nums: list[int]) -> dict[int, str]:
        """``{document number: passage id}`` for ``nums`` (at most 900)."""
        marks = ",".join("?" * len(nums))
        return dict(self.db.execute(f"SELECT docnum, id FROM lucene WHERE docnum IN ({marks})", nums))

    def passages(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM docs").fetchone()[0]

    def known(self, ids: list[str]) -> int:
        """How many of ``ids`` (at most 900) the store holds."""
        marks = ",".join("?" * len(ids))
        return self.db.execute(f"SELECT COUNT(*) FROM docs WHERE id IN ({marks})", ids).fetchone()[0]

    def by_docnums(self, nums: list[int]) -> dict[int, dict]:
        """``{document number: {id, title, text}}`` for ``nums`` (it may hold more: while the cache has
        room it is the cache itself); the dicts are shared with the cache: copy, never change them."""
        cache = self._cache
        if self._evicting:
            return self._by_docnums_lru(nums)
        missing = [num for num in nums if num not in cache]
        if len(cache) + len(missing) > self._cache_size:  # from now on the least recently used go
            self._evicting = True
            return self._by_docnums_lru(nums)
        cache.update(self._read_docnums(missing))
        return cache

    def _by_docnums_lru(self, nums: list[int]) -> dict[int, dict]:
        cache = self._cache
        out, missing = {}, []
        for num in nums:
            doc = cache.get(num)
            if doc is None:
                missing.append(num)
            else:
                cache.move_to_end(num)
                out[num] = doc
        read = self._read_docnums(missing)
        out.update(read)
        cache.update(read)
        while len(cache) > self._cache_size:
            cache.popitem(last=False)
        return out

    def _read_docnums(self, nums: list[int]) -> dict[int, dict]:
        out = {}
        for start in range(0, len(nums), 900):
            part = nums[start:start + 900]
            marks = ",".join("?" * len(part))
            query = (f"SELECT l.docnum, d.id, d.title, d.text FROM lucene l JOIN docs d ON d.id = l.id "
                     f"WHERE l.docnum IN ({marks})")
            for num, docid, title, text in self.db.execute(query, part):
                out[num] = {"id": docid, "title": title, "text": text}
        return out
