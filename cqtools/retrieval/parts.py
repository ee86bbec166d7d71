"""An index is a manifest of registered parts; a searcher is composed from the parts it needs.

A part is registered in :data:`cqtools.registry.INDEX_PARTS` through the ``register_index_parts`` hook
(cq's own in :mod:`.builtin_methods`, a plugin's the same way) as a class ``(options, config)`` with:

* ``build(ctx: BuildContext) -> dict | None``: write the part into ``ctx.out`` at ``cq index`` time and
  return its manifest entries (None: not built, e.g. not asked for). Parts build in registration order
  (cq's first), each seeing the entries of those before it in ``ctx.manifest``;
* ``open(index: Index, options)``: the open part, read from ``index.path(...)`` and ``index.manifest``, with
  its own search options (``options``, of the dataclass the class names as ``search_options``: its fields are
  ``cq retrieve`` flags, :mod:`.options`; a class that names none opens as ``open(index)``): a Searcher when the class says ``searchable = True`` (then
  ``cq retrieve --method NAME`` searches it alone, so a plugin registers no searcher of that name, and
  ``--method hybrid --parts A,B`` fuses it with any other), else a helper another part opens (the BM25
  matrix, a scorer of ``bm25``);
* optionally ``check(ctx: BuildContext)``: refuse the build's settings (a one-line error) before any part
  builds;
* optionally ``flag``: the ``cq index`` flag that builds it (named when an index lacks the part), and an
  options dataclass given to ``register(..., options=...)``: its fields are ``cq index`` flags.

The manifest lists the parts built (``"parts"``); one from before the list existed is read as its parts
(:data:`LEGACY`). An open part that can tell whether it is of the index's build (``mixed()``) is checked
after the others are open: a ``cq index --overwrite`` may swap the directory meanwhile.
"""
from __future__ import annotations

import os
import sqlite3
import stat
from dataclasses import dataclass, field
from typing import Callable, Iterator

from ..errors import ResourceError
from .base import SWAPPED, read_manifest, write_manifest

LEGACY = (("bm25", "lucene"), ("bm25_matrix", "bm25_matrix"), ("dense", "dense"))  # (part, its manifest key)


def part_names(manifest: dict, name: str) -> list[str]:
    """The parts an index's manifest lists, each one registered here."""
    from ..registry import INDEX_PARTS

    listed = manifest.get("parts")
    if listed is None:  # a manifest from before part lists: its parts by their entries
        listed = [part for part, key in LEGACY if manifest.get(key)]
    known = INDEX_PARTS.names()
    for part in listed:
        if part not in known:
            raise ResourceError(f"index {name} has a part {part!r} that no installed plugin registers (known parts: "
                                f"{', '.join(known)}); install the plugin that built it (`cq plugins` lists those "
                                f"installed), or rebuild the index with `cq index --overwrite`")
    return list(listed)


@dataclass
class BuildContext:
    """What a part's builder gets: the corpus, the directory being built (swapped in when every part is
    done), the build's generation id, ``cq index``'s own settings (``threads``, ``device``, ``dense``,
    ``encoder`` ...) and the manifest entries of the parts built before."""

    corpus: str
    out: str
    generation: str
    settings: dict
    manifest: dict = field(default_factory=dict)

    def passages(self, progress: bool = False) -> Iterator[dict]:
        """The corpus' passages {id, title, text}, read afresh (a stream: memory does not grow with it); with
        ``progress``, counted on stderr (rate and, from the corpus's size, the time left)."""
        from .. import progress as bars
        from ..data.formats import estimate_passages, iter_corpus

        stream = iter_corpus(self.corpus)
        if not progress:
            return stream
        return bars.counted(stream, "index: reading the corpus", estimate_passages(self.corpus))

    def path(self, *names: str) -> str:
        return os.path.join(self.out, *names)


def build_index(corpus: str, out: str, settings: dict, options: dict, config) -> dict:
    """Build every part into ``out`` (each registered part with the ``options`` it declares; it decides
    whether it is wanted) and write the manifest; returns it."""
    from .. import __version__
    from ..registry import INDEX_PARTS
    from . import generation

    ctx = BuildContext(os.path.abspath(corpus), out, generation.new(), settings)
    made = [(part, part.build(config, **{k: v for k, v in options.items() if v is not None and part.option(k)}))
            for part in INDEX_PARTS.methods()]
    for _, builder in made:  # every part's settings refused before any part spends time building
        if hasattr(builder, "check"):
            builder.check(ctx)
    built = []
    for part, builder in made:
        entries = builder.build(ctx)
        if entries is not None:
            ctx.manifest.update(entries)
            built.append(part.name)
    manifest = {"corpus": ctx.corpus, **ctx.manifest, "parts": built, "generation": ctx.generation,
                "cqtools": __version__}
    write_manifest(out, manifest)
    return manifest


class Index:
    """A ``cq index`` directory (or a plain Pyserini Lucene index) as its parts: :meth:`part` opens one,
    once, with its own of the search's ``options`` (the method's option values: ``k1``, ``b``, ``encoder`` ...)."""

    def __init__(self, index_dir: str, config, options: dict):
        self.name, self.config, self.options = index_dir, config, options
        self.manifest = read_manifest(index_dir)
        self.parts = part_names(self.manifest, index_dir)
        self.store = None  # the passage store every cq index has (sqlite): passages by id or Lucene doc number
        if self.manifest.get("docstore"):
            from .docstore import DocStore

            self.store = DocStore(self.path(self.manifest["docstore"]))
        self._open: dict = {}

    def path(self, *names: str) -> str:
        """A file or folder of the index; one that is there but neither (a FIFO, a device: opening it would
        wait for a writer) is an error naming it."""
        path = os.path.join(self.name, *names)
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return path  # missing: the part that opens it says so
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise ResourceError(f"{path} is not a regular file (a FIFO or a device?); build the index again "
                                "(cq index), or put the file back")
        return path

    def has(self, part: str) -> bool:
        return part in self.parts

    def part(self, name: str):
        """The part ``name``, opened once with its own search options (those of the search's it declares)."""
        if name not in self._open:
            from ..registry import INDEX_PARTS
            from .options import part_values

            if not self.has(name):
                flag = getattr(INDEX_PARTS.get(name).factory, "flag", None) or "--overwrite"
                raise ResourceError(f"index {self.name} has no {name} part; rebuild it with "
                                    f"`cq index --corpus FILE --out {self.name} {flag}`")
            part = INDEX_PARTS.build(name, self.config)
            declared = getattr(type(part), "search_options", None)
            self._open[name] = part.open(self, part_values(type(part), self.options)) if declared else part.open(self)
        return self._open[name]

    def passages(self):
        """Where hits that carry ids only (dense ones) get their passages: the passage store, or (an index
        from before it) the stored documents of the bm25 part."""
        if self.store is None:
            return self.part("bm25")
        from .docstore import StoredPassages

        return StoredPassages(self.store)

    def mixed(self) -> str | None:
        """Why the open parts are not one build of the index, or None when they are."""
        for part in self._open.values():
            check = getattr(part, "mixed", None)
            reason = check() if check else None
            if reason:
                return reason
        return None


def open_composed(index_dir: str, config, options: dict, compose: Callable[[Index], object]):
    """``compose(index)``: a searcher made from the parts of the index at ``index_dir``, once the parts it
    opened are one generation of the index (else opened again, then a one-line error)."""
    for attempt in range(3):
        try:
            index = Index(index_dir, config, options)
            searcher = compose(index)
        except (OSError, sqlite3.Error) as err:
            reason = str(err)
        else:
            reason = index.mixed()
            if reason is None:
                return searcher
    raise ResourceError(SWAPPED.format(name=index_dir) + f" ({reason})")
