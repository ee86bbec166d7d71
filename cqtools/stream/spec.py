"""What a command asked of the stream engine (:class:`StreamSpec`), apart from the engine itself, so that the run
record (cqtools/runrecord.py) reads which of its fields never change a record without importing the engine."""
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
