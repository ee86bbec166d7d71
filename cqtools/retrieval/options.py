"""The searchers' options (``cq retrieve --method``), each declared once; the defaults are Anserini's and
cq's hybrid fusion's (cqtools/retrieval/base.py).

An index part owns its search options: its class names them as ``search_options``, a dataclass of
:func:`~cqtools.registry.option` fields (bm25's :class:`Bm25Options`, dense's :class:`DenseOptions`, a
plugin's own), and opens with them (``open(index, options)``). ``cq retrieve --method PART`` takes them as
flags; ``--method hybrid`` takes its fusion's (:class:`FusionOptions`) and every searchable part's
(:func:`hybrid_options`), and each side of the fusion gets its own (:func:`part_values`)."""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass

from ..errors import InputError
from ..registry import option
from .base import ALPHA, B, FUSION, K1


def _finite(value: float, where: str) -> float:
    import math

    if not math.isfinite(value):
        raise InputError(f"{where}: BM25 k1 must be a finite number, not {value!r}")
    return value


def _two_parts(value: str, where: str) -> str:
    names = [name.strip() for name in value.split(",")]
    if len(names) != 2 or not all(names) or names[0] == names[1]:
        raise InputError(f"{where}: --parts takes two different index parts, A,B (e.g. bm25,dense), not {value!r}")
    return ",".join(names)


@dataclass(frozen=True)
class Bm25Options:
    """Anserini's BM25 (Lucene)"""

    k1: float = option(K1, "BM25 k1", min=0.0, check=_finite)  # Lucene's BM25Similarity refuses others
    b: float = option(B, "BM25 b", min=0.0, max=1.0)
    bm25_scorer: str = option("auto", "how BM25 scores are computed, the same ids, scores and order either way: "
                                      "auto (the index's BM25 matrix when it has one: `cq index` writes one for a "
                                      "small corpus, scored in numpy; else Lucene), lucene, or matrix",
                              choices=("auto", "lucene", "matrix"),  # the same bytes either way
                              shaping=False)  # (tests/test_bm25_matrix.py): --resume may switch


@dataclass(frozen=True)
class DenseOptions:
    """faiss inner product over the index's dense part (sentence-transformers or DPR)"""

    encoder: str | None = option(None, "dense query encoder [default: the one recorded in the index; for a prebuilt "
                                       "DPR index, its DPR question encoder]")
    ef_search: int | None = option(None, "HNSW dense indexes: candidates kept while searching the graph (faiss's "
                                         "efSearch, raised to --hits when lower; more: higher recall, slower) "
                                         "[default: the one `cq index` calibrated, else faiss's 16]", min=1,
                                   metavar="N")
    nprobe: int | None = option(None, "IVF dense indexes: inverted lists searched per query (faiss's nprobe; more: "
                                      "higher recall, slower) [default: the one `cq index` calibrated, else faiss's "
                                      "1]", min=1, metavar="N")


@dataclass(frozen=True)
class FusionOptions:
    """bm25 + dense, fused by --fusion"""

    fusion: str = option(FUSION, "reciprocal rank (rrf), Pyserini's normalised interpolation (linear), or pool (both "
                                 "sides' top --hits, up to twice as many passages, in rrf order: ToC's pool)",
                         choices=("rrf", "linear", "pool"))
    alpha: float = option(ALPHA, "sparse weight for --fusion linear")
    parts: str | None = option(None, "the two index parts fused, A,B: bm25, dense, or a plugin's searchable part "
                                     "(`cq plugins --all` lists the index parts); the first takes --alpha "
                                     "[default: bm25,dense]", check=_two_parts)


@dataclass(frozen=True)
class PartOptions:
    """(an index part that declares no search options)"""


def search_options(part_class) -> type:
    """The search options dataclass an index part's class declares (``search_options``), or the empty one."""
    return getattr(part_class, "search_options", None) or PartOptions


def _fields(cls) -> list[tuple]:
    hints = typing.get_type_hints(cls)
    return [(f.name, hints[f.name], dataclasses.field(default=f.default, metadata=f.metadata))
            for f in dataclasses.fields(cls)]


def hybrid_options(part_classes) -> type:
    """``--method hybrid``'s options: :class:`FusionOptions`' then every searchable part's own (``part_classes``,
    in registration order; a name two parts declare is one option, given to both)."""
    fields = _fields(FusionOptions)
    for cls in part_classes:
        fields += [f for f in _fields(search_options(cls)) if f[0] not in {g[0] for g in fields}]
    made = dataclasses.make_dataclass("HybridOptions", fields, frozen=True)
    made.__doc__ = FusionOptions.__doc__
    return made


def part_values(part_class, values: dict):
    """The search options of the part ``part_class`` from a method's option values (those it declares; the rest
    are other parts' or the fusion's)."""
    cls = search_options(part_class)
    return cls(**{f.name: values[f.name] for f in dataclasses.fields(cls) if f.name in values})
