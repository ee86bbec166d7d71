"""The Protocols of cqtools/protocols.py: the test fakes and the real backends and methods have those
shapes. Statically (a class's methods have the Protocol's parameters, in its order, with its defaults;
its data attributes are set somewhere) without loading weights, then ``isinstance`` on real objects
where they are cheap to make (tiny local models, the fixture index)."""
from __future__ import annotations

import dataclasses
import inspect
import re

import pytest

from cqtools import protocols as P

from .conftest_models import RERANKER, bm25_index, tiny_cross_encoder  # noqa: F401
from .fakes import FakeCrossEncoder, FakeEncoder, FakeGenerator, FakeSearcher

PROTOCOLS = [P.Generator, P.CrossEncoder, P.Encoder, P.Searcher, P.Detector, P.CQMethod, P.Oracle, P.Reader,
             P.AnswerVerifier]


def members(proto) -> tuple[dict, set[str]]:
    """(methods by name, data attribute names) that a Protocol declares."""
    methods = {k: v for k, v in vars(proto).items() if inspect.isfunction(v) and not k.startswith("_")}
    data = set(getattr(proto, "__annotations__", {}))
    return methods, data


def shape_problems(cls, proto) -> list[str]:
    """How ``cls`` differs from ``proto``: a missing method; a Protocol parameter it lacks (unless it
    takes **kwargs), takes in another position, or without a default the Protocol gives; an extra
    parameter without a default; a data attribute set nowhere (class attribute, property, dataclass
    field, or ``self.NAME =`` in its source)."""
    problems = []
    methods, data = members(proto)
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    for name, spec in methods.items():
        impl = getattr(cls, name, None)
        if impl is None and name not in fields:
            problems.append(f"no method {name}")
            continue
        if name in fields:  # a dataclass field holding a function: its signature is the instance's business
            continue
        want = list(inspect.signature(spec).parameters.values())[1:]
        have = list(inspect.signature(impl).parameters.values())[1:]
        have_by_name = {p.name: p for p in have}
        var_kw = any(p.kind is p.VAR_KEYWORD for p in have)
        positional = [p.name for p in have if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        for i, p in enumerate(want):
            got = have_by_name.get(p.name)
            if got is None:
                if not var_kw or p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty:
                    problems.append(f"{name}() has no parameter {p.name}")
                continue
            if p.kind is p.POSITIONAL_OR_KEYWORD and (i >= len(positional) or positional[i] != p.name):
                problems.append(f"{name}(): {p.name} is not parameter {i + 1}")
            if p.default is not p.empty and got.default is got.empty:
                problems.append(f"{name}(): {p.name} has no default")
            elif p.default is not p.empty and got.default != p.default:
                problems.append(f"{name}(): {p.name} defaults to {got.default!r}, not {p.default!r}")
        for p in have:
            if p.name not in {w.name for w in want} and p.default is p.empty and p.kind not in (
                    p.VAR_POSITIONAL, p.VAR_KEYWORD):
                problems.append(f"{name}() requires {p.name}, which callers do not pass")
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        source = ""
    for name in data:
        if not (hasattr(cls, name) or name in fields or re.search(rf"self\.{name}\b[^=\n]*=(?!=)", source)):
            problems.append(f"no attribute {name}")
    return problems


def real_classes():
    from cqtools.models.encoders import HFCrossEncoder, OnnxCrossEncoder, OnnxEncoder, SentenceEncoder
    from cqtools.models.generator import LocalGenerator
    from cqtools.models.dpr import DPREncoder
    from cqtools.models.openai_backend import OpenAIGenerator
    from cqtools.retrieval.dense import DenseSearcher
    from cqtools.retrieval.hybrid import HybridSearcher
    from cqtools.retrieval.lucene import LuceneBM25
    from cqtools.stages.answer.reader import GenerativeReader
    from cqtools.stages.detect import ScoredDetector
    from cqtools.stages.gen_cq import CQWriter
    from cqtools.stages.oracle import SimulatedUser

    return [(LocalGenerator, P.Generator), (OpenAIGenerator, P.Generator), (OnnxCrossEncoder, P.CrossEncoder),
            (HFCrossEncoder, P.CrossEncoder), (OnnxEncoder, P.Encoder), (SentenceEncoder, P.Encoder),
            (DPREncoder, P.Encoder), (LuceneBM25, P.Searcher), (DenseSearcher, P.Searcher),
            (HybridSearcher, P.Searcher), (ScoredDetector, P.Detector), (CQWriter, P.CQMethod),
            (SimulatedUser, P.Oracle),
            (GenerativeReader, P.Reader), (GenerativeReader, P.AnswerVerifier)]


FAKES = [(FakeGenerator, P.Generator, lambda: FakeGenerator("x")),
         (FakeCrossEncoder, P.CrossEncoder, FakeCrossEncoder),
         (FakeEncoder, P.Encoder, FakeEncoder),
         (FakeSearcher, P.Searcher, lambda: FakeSearcher([]))]


@pytest.mark.parametrize("cls,proto,make", FAKES, ids=[c.__name__ for c, _, _ in FAKES])
def test_fakes_have_the_protocol_shapes(cls, proto, make):
    assert shape_problems(cls, proto) == []
    assert isinstance(make(), proto)


def test_the_shape_check_can_fail():
    class Wrong:
        name = "w"

        def generate(self, prompts, chat=None, max_new_tokens=16):  # reordered, another default
            return []

        def score(self, prompts, continuations, prefix):  # no default, no batch_size
            return []

    problems = shape_problems(Wrong, P.Generator)
    assert "no method chat_prompt" in problems and "no attribute kind" in problems
    assert "generate(): max_new_tokens is not parameter 2" in problems
    assert "generate(): max_new_tokens defaults to 16, not 32" in problems
    assert "generate() has no parameter batch_size" in problems
    assert "score(): prefix has no default" in problems and "score() has no parameter batch_size" in problems
    assert not isinstance(Wrong(), P.Generator)


@pytest.mark.parametrize("cls,proto", real_classes(), ids=lambda x: x.__name__)
def test_real_classes_have_the_protocol_shapes(cls, proto):
    assert shape_problems(cls, proto) == []


# --- real objects (cheap ones) ------------------------------------------------------------------

def test_tiny_generators_are_generators(tiny_causal, tiny_seq2seq):
    from cqtools.models.load import load_generator

    for path in (tiny_causal, tiny_seq2seq):
        assert isinstance(load_generator(path, "cpu"), P.Generator)


@pytest.mark.heavy(reason="loads the INT8 reranker, MiniLM and bge-small")
def test_cross_encoders_and_encoders(tiny_cross_encoder):  # noqa: F811
    from cqtools.models.load import load_cross_encoder, load_encoder
    from cqtools.models.encoders import HFCrossEncoder, OnnxCrossEncoder, OnnxEncoder, SentenceEncoder

    onnx = load_cross_encoder(RERANKER, "cpu")
    hf = load_cross_encoder(tiny_cross_encoder, "cpu")
    assert type(onnx) is OnnxCrossEncoder and type(hf) is HFCrossEncoder
    assert isinstance(onnx, P.CrossEncoder) and isinstance(hf, P.CrossEncoder)
    minilm, bge = load_encoder("sentence-transformers/all-MiniLM-L6-v2", "cpu"), load_encoder("BAAI/bge-small-en-v1.5")
    assert type(minilm) is SentenceEncoder and type(bge) is OnnxEncoder  # the offline copies' formats
    assert isinstance(minilm, P.Encoder) and isinstance(bge, P.Encoder)


def test_bm25_searcher_is_a_searcher(bm25_index):  # noqa: F811
    from cqtools.retrieval import open_searcher
    from cqtools.retrieval.lucene import LuceneBM25

    searcher = open_searcher(bm25_index, "bm25")
    assert type(searcher) is LuceneBM25 and isinstance(searcher, P.Searcher)
    hits = searcher.search("who played the joker", 3)
    assert [h["rank"] for h in hits] == [1, 2, 3] and set(hits[0]) >= {"id", "title", "text", "score", "rank"}


def test_registered_detectors_cq_methods_and_readers(monkeypatch):
    from cqtools.models import load
    from cqtools.registry import CQ_METHODS, DETECTORS, READERS
    from cqtools.stages.detect import llm_detector
    from cqtools.stages.gen_cq import LlmOptions, Seq2SeqOptions, llm_method, seq2seq_method

    fake = FakeGenerator("x")
    monkeypatch.setattr(load, "load_generator", lambda name, device="auto", dtype="auto", kind="auto", config=None: fake)
    def model_if_taken(registry, name):  # a method that declares no model option refuses one
        return {"model": "m"} if registry.get(name).option("model") else {}

    for name in ("always", "never", "answers", "tree", "llm"):
        assert isinstance(DETECTORS.build(name, **model_if_taken(DETECTORS, name)), P.Detector), name
    assert isinstance(llm_detector(fake, 0.0), P.Detector)
    for name in ("from-dqs", "llm", "seq2seq"):
        assert isinstance(CQ_METHODS.build(name, **model_if_taken(CQ_METHODS, name)), P.CQMethod), name
    assert isinstance(llm_method(fake, LlmOptions(n_passages=3, max_new_tokens=8)), P.CQMethod)
    assert isinstance(seq2seq_method(fake, Seq2SeqOptions(n_passages=3, max_new_tokens=8)), P.CQMethod)
    from cqtools.registry import ORACLES

    for name in ("overlap", "llm"):
        assert isinstance(ORACLES.build(name, **model_if_taken(ORACLES, name)), P.Oracle), name
    reader = READERS.build("generative", model="m")
    assert isinstance(reader, P.Reader) and isinstance(reader, P.AnswerVerifier)


def test_every_protocol_is_runtime_checkable():
    for proto in PROTOCOLS:
        assert getattr(proto, "_is_runtime_protocol", False), proto.__name__
