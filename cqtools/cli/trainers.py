"""cq's own trainers (`cq train NAME`), registered through the plugin hooks like any plugin's (cqtools/plugins.py).

A trainer is its settings class, a :class:`cqtools.train.settings.TrainConfig` subclass: registering it (``options=``
the class, the factory the function that trains on an instance) is all `cq train NAME` needs, its command and flags
being generated from the class (cqtools/cli/train.py ``trainer_command``). To add one: write the subclass beside the
trainer (its fields, declared with ``option``, are the flags; its class variables ``command``, ``run``,
``base_model``; its docstring the help), add it to :data:`SETTINGS`, and give a preset rows for ``train NAME`` if a
paper trained it. The combiner (no training loop) and compact are click commands of their own."""
from __future__ import annotations

from ..plugins import hookimpl

# "module:class" of each trainer's settings, in the order `cq train --help` has no say in (it sorts)
SETTINGS = ("cqtools.train.settings:DetectTrainConfig", "cqtools.train.settings:GenCQTrainConfig",
            "cqtools.train.span_reader:ReaderTrainConfig", "cqtools.train.spanseqgen:SpanSeqGenTrainConfig",
            "cqtools.train.qd:QDTrainConfig", "cqtools.train.fid:FiDTrainConfig",
            "cqtools.train.verifier:VerifierTrainConfig", "cqtools.train.rerank:RerankTrainConfig")


def settings_classes() -> list[type]:
    import importlib

    return [getattr(importlib.import_module(m), c) for m, c in (path.split(":") for path in SETTINGS)]


def lazy(path: str):
    """The function at "module:function", imported when called (the trainers import torch)."""
    def run(cfg):
        import importlib

        module, name = path.split(":")
        return getattr(importlib.import_module(module), name)(cfg)

    run.__name__ = path.split(":")[1]
    return run


@hookimpl
def register_trainers(register):
    from . import train

    for settings in settings_classes():
        register(settings.command, lazy(settings.run), help=(settings.__doc__ or "").splitlines()[0],
                 options=settings)
    for command in (train.combiner_cmd, train.compact_cmd):
        register(command.name, command, help=command.get_short_help_str(limit=90), options=[])
