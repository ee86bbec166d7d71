"""What a command asked of the stream engine (:class:`StreamSpec`), apart from the engine itself, and which of a
command's parameters never change a record (:func:`not_shaping`: what the run record of cqtools/runrecord.py leaves
out, asked of the registries that declare them)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..config import NO_RECORD, RunConfig


@dataclass
class StreamSpec:
    """What a command asked for on its command line (the stream/scale option bundles)."""

    on_error: str = field(default="fail", metadata=NO_RECORD)
    quiet: bool = field(default=False, metadata=NO_RECORD)
    batch_size: int = field(default=32, metadata=NO_RECORD)  # shapes a record only with padded batches
    shard: tuple[int, int] | None = None
    resume: str | None = field(default=None, metadata=NO_RECORD)
    force_resume: bool = field(default=False, metadata=NO_RECORD)
    required: tuple[str, ...] = ("question",)
    desc: str = "records"
    fanout: bool = False  # process returns a list of records per input (in order), not one record
    output: str | None = field(default=None, metadata=NO_RECORD)
    sinks: list = field(default_factory=list)  # write(records), commit(), abort(): e.g. a TREC run
    command: str | None = None  # the run record's command and parameters (default: the click command's,
    params: dict | None = None  # or the batch function's cq_command / cq_params from a stage's build())
    inputs: tuple[str, ...] = ()  # FILE arguments, read in order instead of standard input
    total: int | None = None      # --total: records expected (the progress bar's total)
    preset: str | None = None     # the preset the stage runs under (meta.presets.<stage>; default: the batch
    stage: str | None = None      # function's cq_preset) and the command it is noted under (default: its
    config: RunConfig | None = None  # cq_command); the run configuration (default: one from the environment)
    preset_rows: dict | None = None  # which of the preset's rows applied (meta.preset_rows.<stage>; default: the
    #                                  batch function's cq_preset_rows)
    refused: int = 0  # records set aside because a server refused their request (stream/refusals.py)


def not_shaping(command: str, params: dict) -> frozenset:
    """The parameters of ``command`` run with ``params`` that a run record does not compare: those that never change
    a record (where and how fast the work runs, where the output goes: docs/benchmarks/determinism.md), each marked
    where it is declared: the stream engine's (:class:`StreamSpec`, ``NO_RECORD``), the run configuration's and the
    model backends' (cqtools/runrecord.py ``config_not_shaping``), the command's own (cq retrieve's threads and TREC
    run: ``cqtools.presets.command_settings``) and the options of the method ``params`` chose
    (``option(shaping=False)``: Lucene or the BM25 matrix, the same bytes). Another method's option of the same name
    is compared."""
    from dataclasses import fields

    from .. import registry
    from ..presets import CHOOSERS, command_settings
    from ..runrecord import config_not_shaping

    marked = {f.name for f in fields(StreamSpec) if f.metadata.get("shaping") is False}
    marked |= {name for name, option in command_settings(command).items() if not option.shaping}
    key, registry_name = CHOOSERS.get(command, (None, None))
    chosen = params.get(key)
    methods = getattr(registry, registry_name) if registry_name else None
    if methods is not None and isinstance(chosen, str) and chosen in methods.names():
        marked |= {o.name for o in methods.get(chosen).options if not o.shaping}
    return frozenset(marked | config_not_shaping())
