"""``cq models export NAME DIR``: a model cq ships (cqtools/shipped/NAME, int8 rows) or any compact model
directory, written as a standard Hugging Face model directory: float32 ``model.safetensors``, its
config and tokenizer files, and its model card with the Hub's metadata header, so that
``AutoModelForSequenceClassification.from_pretrained(DIR)`` (or ``AutoModelForQuestionAnswering``, per
its config) loads it without cq. The weights are the compact ones multiplied back into float32
(:func:`cqtools.models.compact.load_state`): exactly what cq itself computes with."""
from __future__ import annotations

import os
import shutil

from ..errors import InputError
from . import compact

# The Hub's model-card metadata (the YAML block a model card starts with) of each model cq ships.
PIPELINE_TAGS = {"detect": "text-classification", "reader": "question-answering"}
TAGS = {"detect": "ambiguity-detection", "reader": "extractive-qa"}


def hf_header(name: str, base_model: str = "sentence-transformers/all-MiniLM-L6-v2") -> str:
    """The metadata header of the shipped model ``name``'s card (bench/shipped.py writes it)."""
    return ("---\nlibrary_name: transformers\n"
            f"pipeline_tag: {PIPELINE_TAGS[name]}\n"
            f"base_model: {base_model}\n"
            "datasets:\n- sewon/ambig_qa\nlanguage:\n- en\n"
            f"tags:\n- cqtools\n- {TAGS[name]}\n---\n\n")


SHIPPED = os.path.join(os.path.dirname(os.path.dirname(__file__)), "shipped")


def shipped_names() -> list[str]:
    return sorted(n for n in os.listdir(SHIPPED) if compact.is_compact(os.path.join(SHIPPED, n)))


def source_dir(name: str) -> str:
    """The compact directory ``name`` names: a shipped model's name, or a path."""
    path = os.path.join(SHIPPED, name) if name in shipped_names() else os.path.expanduser(name)
    if not compact.is_compact(path):
        raise InputError(f"{name!r} is neither a model cq ships ({', '.join(shipped_names())}) nor a directory of "
                         f"compact weights ({compact.WEIGHTS}); a `cq train` directory is a Hugging Face one already")
    return path


def export(name: str, out: str, overwrite: bool = False) -> dict:
    """Write ``name`` (see :func:`source_dir`) to ``out`` as a Hugging Face model directory."""
    from safetensors.torch import save_file

    src = source_dir(name)
    if os.path.exists(out) and os.listdir(out) and not overwrite:
        raise InputError(f"{out} exists and is not empty; pass --overwrite or another directory")
    os.makedirs(out, exist_ok=True)
    state = {k: v.contiguous() for k, v in compact.load_state(src).items()}
    save_file(state, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    copied = [f for f in compact.COPIED if os.path.isfile(os.path.join(src, f))]
    for f in copied:
        shutil.copy2(os.path.join(src, f), os.path.join(out, f))
    card = os.path.join(src, "README.md")
    if os.path.isfile(card):
        shutil.copy2(card, os.path.join(out, "README.md"))
    return {"model": name, "from": src, "out": out, "files": ["model.safetensors", *copied, "README.md"],
            "tensors": len(state)}
