"""The run configuration: one frozen value, built once from a command's flags and the environment.

Every setting that says *how* models are loaded and called (device, dtype, hub revision,
quantization, remote code, input limits, padded batches, caches) lives in :class:`RunConfig`; a
model backend's own settings (the openai backend's server and pace) are its options, declared on the
backend, whose flags' values ride in ``backend_settings`` (cqtools/models/backend_options.py). A command builds it
once, as a value, where it starts (its flags' callbacks only record what they were given: cqtools/cli/options.py
``run_config``), and passes it to ``Registry.build``, which passes it to the method's factory, which passes it to the
model loaders (a model keeps the configuration it was built under). There is no process-wide configuration: a
Python caller passes one, or a library edge called without one builds it from the environment with
:meth:`RunConfig.from_env` (the edges are listed in tests/test_explicit_config.py). This module is the only
one that reads cq's environment variables: :data:`ENV` lists them all (docs/config.md is generated
from it), and the run record of ``--resume`` holds the whole configuration, so a resume under
another ``CQ_PADDED_BATCHES`` (or any other field that can change a record) is refused.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field, fields
from typing import Any, Callable

from .errors import InputError


def _bool(text: str) -> bool:
    return text.strip().lower() not in ("", "0", "false", "no", "off")


def _opt_int(text: str) -> int | None:
    return int(text) if text.strip() else None


def _opt_str(text: str) -> str | None:
    return text.strip() or None


@dataclass(frozen=True)
class EnvVar:
    """One environment variable: the field it sets (or None: read where named), how to parse it, and why."""

    name: str
    field: str | None
    parse: Callable[[str], Any]
    help: str


ENV: tuple[EnvVar, ...] = (
    EnvVar("CQ_DEVICE", "device", str, "--device: where models run (auto, cpu, cuda, mps)"),
    EnvVar("CQ_DTYPE", "dtype", str, "--dtype: language models' weights dtype"),
    EnvVar("CQ_REVISION", "revision", _opt_str, "--revision: a hub branch, tag or commit"),
    EnvVar("CQ_TRUST_REMOTE_CODE", "trust_remote_code", _bool, "--trust-remote-code: run a hub model's own code"),
    EnvVar("CQ_QUANTIZE", "quantize", _opt_str, "--quantize: 8bit or 4bit weights (bitsandbytes, CUDA)"),
    EnvVar("CQ_MAX_INPUT_TOKENS", "max_input_tokens", _opt_int, "--max-input-tokens: cut longer model inputs"),
    EnvVar("CQ_MAX_QUESTION_CHARS", "max_question_chars", int,
           "a longer 'question' is a bad record (a pasted document?), refused before any model reads it"),
    EnvVar("CQ_PADDED_BATCHES", "padded_batches", _bool,
           "pad model batches (faster on a GPU; outputs then depend on the batch)"),
    EnvVar("CQ_BATCH_SIZE_MODEL", "model_batch_size", int, "--model-batch-size: items per forward pass"),
    EnvVar("CQ_CACHE", "cache_dir", _opt_str, "converted weights and API responses [~/.cache/cqtools]"),
    EnvVar("CQ_MODELS", "models_dir", _opt_str, "trained models that cq's defaults use [~/.cache/cqtools/models]"),
    EnvVar("CQ_DATA", None, str, "cq data get's directory for the public data sets [~/.cache/cqtools/data]"),
    EnvVar("CQ_DATA_MIRROR", None, str, "cq data get --mirror: a base URL serving the data sets' files by name"),
    EnvVar("CQ_GEN_CACHE", "gen_cache", _opt_str, "a SQLite file of greedy generations shared by processes"),
    EnvVar("CQ_GEN_CACHE_REPORT", "gen_cache_report", _opt_str, "append generation-cache hit counts to this file"),
    EnvVar("CQ_OFFLINE", "offline", _bool, "never ask the hub or Pyserini's servers (HF_HUB_OFFLINE=1 too)"),
    EnvVar("CQ_ORT_THREADS", "ort_threads", _opt_int, "onnxruntime threads per session"),
    EnvVar("CQ_ORT_SPIN", "ort_spin", _bool, "onnxruntime threads spin while idle"),
    EnvVar("CQ_JVM_XMX", "jvm_xmx", _opt_str, "the JVM's heap limit for Lucene (e.g. 4g)"),
    EnvVar("CQ_JVM_OPTS", None, str, "the search JVM's other options, replacing cq's (C1 only, the serial collector)"),
    EnvVar("CQ_USAGE", "usage", _bool, "note each record's LM calls, tokens and seconds per stage in meta.usage "
           "(cq score --task clam --curves reports them per answered question)"),
    EnvVar("CQ_DEBUG", "debug", _bool, "tracebacks instead of one-line errors; library logs on"),
    EnvVar("CQ_SERVER", None, str, "a cq fork server's socket: a run goes to it when it can take it exactly "
           "(cqtools/forkserver; make compare's SERVE)"),
    EnvVar("CQ_SERVER_WAIT", None, str, "seconds cq waits for the fork server to take a run before it runs it in a "
           "process of its own, with a note on stderr (not a bound on the run) [30]"),
    EnvVar("CQ_BATCH_SIZE", None, int, "--batch-size: records per stream batch"),
    EnvVar("CQ_API_KEY", None, str, "the API key (else OPENAI_API_KEY); read when a request is sent, never stored"),
    EnvVar("CQ_INDEX", None, str, "--index: the index cq retrieve, cq chat and cq answer --mode dqs read"),
    EnvVar("CQ_PRESET", None, str, "--preset: the paper's preset every stage command runs with (cq presets lists them)"),
    EnvVar("CQ_MODEL_BERTSCORE", None, str, "cq score --bertscore-model: the model BERTScore embeds with"),
    EnvVar("CQ_MODEL_TRAIN_DETECT", None, str, "cq train detect --model: the encoder fine-tuned as the classifier"),
    EnvVar("CQ_MODEL_TRAIN_GEN_CQ", None, str, "cq train gen-cq --model: the LM fine-tuned as the CQ generator"),
    EnvVar("CQ_MODEL_TRAIN_READER", None, str, "cq train reader --model: the encoder fine-tuned as the span reader"),
    EnvVar("CQ_MODEL_TRAIN_SPANSEQGEN", None, str, "cq train spanseqgen --model: the seq2seq model fine-tuned as "
                                                   "AmbigQA's SpanSeqGen"),
    EnvVar("CQ_MODEL_TRAIN_QD", None, str, "cq train qd --model: the seq2seq model fine-tuned as AmbigQA's "
                                           "question-disambiguation model"),
    EnvVar("CQ_MODEL_TRAIN_FID", None, str, "cq train fid --model: the seq2seq model fine-tuned as REFUEL's "
                                            "Fusion-in-Decoder reader"),
    EnvVar("CQ_MODEL_TRAIN_VERIFIER", None, str, "cq train verifier --model: the seq2seq model fine-tuned as REFUEL's "
                                                 "LM verifier"),
    EnvVar("CQ_MODEL_TRAIN_RERANK", None, str, "cq train rerank --model: the cross-encoder fine-tuned as REFUEL's "
                                               "passage reranker"),
)

BY_NAME = {v.name: v for v in ENV}
# the command-line flag of each field that has one ("--max-input-tokens"), for messages
FLAGS = {v.field: v.help.split(":")[0] for v in ENV if v.field and v.help.startswith("--")}


# A field's mark: it never changes a record (the run record of --resume does not compare it).
NO_RECORD = {"shaping": False}


@dataclass(frozen=True)
class RunConfig:
    """How this run loads and calls models. ``shaping()`` is the part that can change a record."""

    device: str = field(default="auto", metadata=NO_RECORD)
    dtype: str = "auto"
    revision: str | None = None
    trust_remote_code: bool = False
    quantize: str | None = None
    max_input_tokens: int | None = None
    max_question_chars: int = field(default=4000, metadata=NO_RECORD)
    padded_batches: bool = False
    model_batch_size: int = field(default=32, metadata=NO_RECORD)  # shapes a record only with padded batches
    cache_dir: str | None = field(default=None, metadata=NO_RECORD)
    models_dir: str | None = None
    gen_cache: str | None = field(default=None, metadata=NO_RECORD)
    gen_cache_report: str | None = field(default=None, metadata=NO_RECORD)
    offline: bool = field(default=False, metadata=NO_RECORD)
    ort_threads: int | None = field(default=None, metadata=NO_RECORD)
    ort_spin: bool = field(default=False, metadata=NO_RECORD)
    jvm_xmx: str | None = field(default=None, metadata=NO_RECORD)
    debug: bool = field(default=False, metadata=NO_RECORD)
    usage: bool = field(default=False, metadata=NO_RECORD)  # adds meta.usage only: cqtools/stream/usage.py
    backend_options: tuple = ()  # (key, value) pairs for a BACKEND:NAME model's backend (--backend-opt)
    # (key, value) pairs of model backends' options given by their flags (the openai backend's api_base,
    # concurrency, ...: cqtools/models/openai_backend.py declares them), for any backend that declares the name;
    # with the ones from their variables (cqtools/models/backend_options.py) the run record holds them as
    # fields of their own (api_base, concurrency, ...).
    backend_settings: tuple = ()
    extra: dict = field(default_factory=dict, compare=False, hash=False,
                        metadata=NO_RECORD)  # not a setting: for plugins' own

    @classmethod
    def not_shaping(cls, backends: frozenset = frozenset()) -> frozenset:
        """The fields that never change a record (where the work runs, its pace, where caches live, logging), left
        out of the run record's comparison like --batch-size (docs/benchmarks/determinism.md): each marked where it
        is declared, this class's with :data:`NO_RECORD`; ``backends``: the model backends' settings marked
        ``option(shaping=False)`` (the run record passes them: cqtools/runrecord.py ``config_not_shaping``)."""
        return frozenset({f.name for f in fields(cls) if f.metadata.get("shaping") is False} | backends)

    @classmethod
    def from_env(cls, environ: dict | None = None, **flags) -> "RunConfig":
        """Environment variables first, then ``flags`` (None values: not given) on top. (The model backends'
        own variables are read with their options: cqtools/models/backend_options.py.)"""
        environ = os.environ if environ is None else environ
        values: dict = {}
        for var in ENV:
            raw = environ.get(var.name)
            if var.field is None or raw is None:
                continue
            try:
                values[var.field] = var.parse(raw)
            except ValueError:
                raise InputError(f"{var.name}={raw!r} is not valid ({var.help}); fix or unset it") from None
        values.update({k: v for k, v in flags.items() if v is not None})
        unknown = sorted(set(values) - {f.name for f in fields(cls)})
        if unknown:
            raise InputError(f"unknown run configuration field(s): {', '.join(unknown)}")
        return cls(**values).checked()

    def checked(self) -> "RunConfig":
        if self.quantize not in (None, "8bit", "4bit"):
            raise InputError(f"quantize must be 8bit or 4bit, not {self.quantize!r}")
        if self.max_input_tokens is not None and self.max_input_tokens < 16:
            raise InputError(f"max_input_tokens must be at least 16, not {self.max_input_tokens}")
        if self.max_question_chars < 1:
            raise InputError(f"max_question_chars must be at least 1, not {self.max_question_chars}")
        return self

    def replace(self, **changes) -> "RunConfig":
        return dataclasses.replace(self, **changes).checked()

    def shaping(self, ignore: frozenset | None = None) -> dict:
        """The fields that can change a record (all but ``ignore``, by default :meth:`not_shaping`)."""
        ignore = self.not_shaping() if ignore is None else ignore
        out = {k: _jsonable(v) for k, v in self.as_dict().items() if k not in ignore}
        if self.padded_batches:  # padded batches: who shares a forward pass changes the numbers
            out["model_batch_size"] = self.model_batch_size
        return out

    def as_dict(self) -> dict:
        """Every field, with each backend setting as a field of its own (``api_timeout``, not a pair)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("extra", "backend_settings")}
        out.update(self.backend_settings)
        return out

    def recorded(self) -> dict:
        """The whole configuration as a run record holds it (an API server's address without user
        info or query, where a key could hide); :meth:`shaping` names the fields a resume compares."""
        out = {k: _jsonable(v) for k, v in self.as_dict().items()}
        if out.get("api_base"):
            from urllib.parse import urlsplit, urlunsplit

            parts = urlsplit(out["api_base"])
            host = parts.hostname or ""
            out["api_base"] = urlunsplit((parts.scheme, f"{host}:{parts.port}" if parts.port else host,
                                          parts.path, "", ""))
        return out

    @classmethod
    def shaping_keys(cls, recorded: dict, ignore: frozenset | None = None) -> list[str]:
        """The fields of a recorded configuration that can change a record (all but ``ignore``, by default
        :meth:`not_shaping`)."""
        ignore = cls.not_shaping() if ignore is None else ignore
        keys = [k for k in recorded if k not in ignore]
        if recorded.get("padded_batches") and "model_batch_size" in recorded:
            keys.append("model_batch_size")
        return keys

    def load_key(self) -> tuple:
        """What decides a loaded model besides its name and device: the process's model cache key."""
        return (self.revision, self.trust_remote_code, self.quantize, self.max_input_tokens, self.padded_batches,
                self.model_batch_size if self.padded_batches else None)

    def cache_root(self) -> str:
        return self.cache_dir or os.path.join(os.path.expanduser("~"), ".cache", "cqtools")

    def models_root(self) -> str:
        return self.models_dir or os.path.join(os.path.expanduser("~"), ".cache", "cqtools", "models")


def data_root() -> str:
    """Where ``cq data get`` puts the public data sets: $CQ_DATA, else ~/.cache/cqtools/data (the Makefile's
    DATA when ../shared/data is absent)."""
    return env("CQ_DATA") or os.path.join(os.path.expanduser("~"), ".cache", "cqtools", "data")


def _jsonable(value):
    """Tuples as lists: what a run record's JSON gives back, so that comparisons agree."""
    return [_jsonable(v) for v in value] if isinstance(value, (tuple, list)) else value


def env(name: str, default: str | None = None) -> str | None:
    """Raw access for the variables read where they are used (listed in :data:`ENV` with field None),
    and for other programs' variables (HF_HUB_OFFLINE, WORLD_SIZE, RANK, NO_COLOR, PATH)."""
    return os.environ.get(name, default)


def child_environment(**changes) -> dict:
    """A copy of this process's environment with ``changes``, for a child process (a Java tool)."""
    return {**os.environ, **changes}


def docs_table(more: tuple[EnvVar, ...] = ()) -> str:
    """The environment variables as a markdown table (docs/config.md), ``more`` (the model roles') after them."""
    rows = ["| variable | run configuration field | meaning |", "|---|---|---|"]
    rows += [f"| `{v.name}` | {f'`{v.field}`' if v.field else '—'} | {v.help.replace('|', chr(92) + '|')} |"
             for v in ENV + tuple(more)]
    return "\n".join(rows)
