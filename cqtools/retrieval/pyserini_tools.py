"""Pyserini's own command-line tools (``python -m pyserini.search.lucene ...``) run in this
process after the JVM shim (:mod:`.jvm`), which they cannot start without here, and pointed at
the right part of a ``cq index`` directory.

A ``cq index`` holds a Lucene index in ``lucene/`` and a faiss index in ``dense/`` (Pyserini's
layouts). For ``search.lucene`` / ``search.faiss`` an ``--index IDX`` naming a cq index becomes
that part; for ``search.faiss`` without ``--encoder`` / ``--encoded-queries`` the query encoder
recorded in the index is added with the options that make Pyserini encode queries as cq does
(sentence-transformers: the model's pooling, L2-normalised; DPR: ``--encoder-class dpr``).
Every other argument is passed through untouched.
"""
from __future__ import annotations

import importlib.util
import json
import logging
import os
import runpy
import sys

from ..errors import ResourceError
from . import jvm
from .base import DENSE_DIR, LUCENE_DIR, MANIFEST

log = logging.getLogger("cqtools")


def module_name(tool: str) -> str:
    name = tool if tool == "pyserini" or tool.startswith("pyserini.") else f"pyserini.{tool}"
    try:
        found = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        found = None
    if found is None:
        raise ResourceError(f"pyserini has no module {name}; pass a tool such as search.lucene, search.faiss, "
                            f"index.lucene or eval.trec_eval")
    return name


def _option(args: list[str], name: str) -> tuple[int, str] | None:
    """(position, value) of ``--name VALUE`` or ``--name=VALUE``."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return i, args[i + 1]
        if arg.startswith(name + "="):
            return i, arg.split("=", 1)[1]
    return None


def _set_option(args: list[str], name: str, position: int, value: str) -> None:
    if args[position] == name:
        args[position + 1] = value
    else:
        args[position] = f"{name}={value}"


def for_cq_index(module: str, args: list[str]) -> list[str]:
    """``args`` with a cq index's ``--index`` turned into the Lucene/faiss part Pyserini reads."""
    args = list(args)
    found = _option(args, "--index")
    if found is None or module not in ("pyserini.search.lucene", "pyserini.search.faiss"):
        return args
    position, index = found
    manifest_path = os.path.join(index, MANIFEST)
    if not os.path.exists(manifest_path):
        return args  # a Pyserini index directory or a prebuilt name: Pyserini's business
    with open(manifest_path) as fh:
        manifest = json.load(fh)
    if module == "pyserini.search.lucene":
        _set_option(args, "--index", position, os.path.join(index, manifest.get("lucene") or LUCENE_DIR))
        return args
    dense = manifest.get("dense")
    if not dense:
        raise ResourceError(f"{index} has no dense part for search.faiss; rebuild it with `cq index --dense`")
    _set_option(args, "--index", position, os.path.join(index, dense.get("dir") or DENSE_DIR))
    if _option(args, "--encoder") is None and _option(args, "--encoded-queries") is None:
        args += _encoder_args(dense)
    return args


def _encoder_args(dense: dict) -> list[str]:
    from ..models import resolve

    if dense.get("kind") == "dpr":
        return ["--encoder", resolve(dense["query_encoder"], announce=False).path, "--encoder-class", "dpr"]
    path = resolve(dense["encoder"], announce=False).path
    out = ["--encoder", path, "--encoder-class", "auto", "--pooling", _st_pooling(path)]
    return out + (["--l2-norm"] if dense.get("normalized", True) else [])


def _st_pooling(path: str) -> str:
    """A sentence-transformers model's pooling, from its Pooling module's config."""
    try:
        with open(os.path.join(path, "modules.json")) as fh:
            modules = json.load(fh)
        pooling = next(m for m in modules if m.get("type", "").endswith("Pooling"))
        with open(os.path.join(path, pooling["path"], "config.json")) as fh:
            config = json.load(fh)
    except (OSError, StopIteration, ValueError):
        return "mean"
    if config.get("pooling_mode_cls_token"):
        return "cls"
    if config.get("pooling_mode_mean_tokens"):
        return "mean"
    raise ResourceError(f"the encoder at {path} pools in a way Pyserini's AutoQueryEncoder does not (config "
                        f"{config}); pass --encoder and --pooling to search.faiss yourself")


def run(tool: str, args: list[str]) -> int:
    """Run ``python -m pyserini.<tool> args`` here; returns its exit status."""
    jvm.setup()  # before anything imports pyserini (finding pyserini.search.lucene imports its package)
    module = module_name(tool)
    argv = for_cq_index(module, args)
    if argv != list(args):
        log.info("running: python -m %s %s", module, " ".join(argv))
    saved = sys.argv
    sys.argv = [module, *argv]
    try:
        with jvm.pyserini_imports():  # the tool imports pyserini.encode (the placeholder key) as it runs
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as done:
        code = done.code
        if code is None or isinstance(code, int):
            return code or 0
        log.error("%s", code)  # exit("message")
        return 1
    finally:
        sys.argv = saved
    return 0
