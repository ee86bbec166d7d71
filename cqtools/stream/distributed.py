"""``WORLD_SIZE`` > 1 (``accelerate launch --multi_gpu --num_processes N -m cqtools ...`` or torchrun):
the stream loop's records spread over processes, the output that of one process."""
from __future__ import annotations

import logging
from itertools import islice

from ..config import env
from ..errors import CQError

log = logging.getLogger("cqtools")


def run_distributed(process, spec, stdin=None, stdout=None, *, new_run, apply) -> int:
    """One round per ``world`` batches: the main process reads and scatters them, every process
    runs ``process`` on its batch, the main process gathers and writes in input order.
    ``new_run`` and ``apply`` are the single-process loop's (cqtools/cli/stream.py, which calls this:
    passed in, so that neither module imports the other).

    A failure in any process stops every process; the main one raises it as a CQError."""
    import torch.distributed as dist
    from accelerate import PartialState

    PartialState()  # joins the process group the launcher set up (and picks this process's device)
    if not dist.is_initialized():
        dist.init_process_group("gloo")
    group = dist.new_group(backend="gloo")  # records travel as pickled objects, on CPU
    rank, world = dist.get_rank(), dist.get_world_size()
    main = rank == 0
    if not main:
        logging.getLogger("cqtools").setLevel(logging.WARNING)
    run = items = None
    if main:
        run = new_run(spec, stdin, stdout)
        items = iter(run.items)
        log.info("%s: %d processes, batches of %d", spec.desc, world, spec.batch_size)
    failure = None  # an input error on the main process, raised after the records before it
    try:
        while True:
            parts = None
            if main:
                parts, failure = _read_round(items, world, spec.batch_size, failure)
            box = [None]
            dist.scatter_object_list(box, parts, src=0, group=group)
            if box[0] is None:
                break
            result = run_part(process, box[0], spec, apply)
            gathered = [None] * world if main else None
            dist.gather_object(result, gathered, dst=0, group=group)
            if not main:
                continue
            error = _write_round(run, parts, gathered)
            if error is not None:
                failure = error
            if failure is not None:
                dist.scatter_object_list([None], [None] * world, src=0, group=group)
                raise failure
        if main:
            if failure is not None:
                raise failure
            run.finish()
    finally:
        if main:
            run.close()
        _shut_down(dist)
    return run.writer.written if main else 0


def _read_round(items, world: int, batch_size: int, failure: CQError | None) -> tuple[list, CQError | None]:
    """The main process's next round as (parts, failure): a batch per process read from ``items`` (a
    short batch ends the round, the rest are empty), or all None at the end of input (everyone stops);
    ``failure``: the one passed in, else the input error met while reading (nothing more is read; the
    records before it are kept)."""
    parts: list = []
    while len(parts) < world and failure is None:
        part: list = []
        try:
            part.extend(islice(items, batch_size))  # keeps what came before an error
        except CQError as err:
            failure = err
        parts.append(part)
        if len(part) < batch_size:
            break
    parts += [[]] * (world - len(parts))
    if not any(parts):
        parts = [None] * world  # end of input (or a failure): everyone stops
    return parts, failure


def _write_round(run, parts: list, gathered: list) -> CQError | None:
    """Write the round's results in input order, up to the first process's failure (returned)."""
    for part, (status, payload) in zip(parts, gathered):
        if status == "error":
            return payload
        run.write(payload, len(part))
    return None


def _shut_down(dist) -> None:
    """Tear the process groups down before the interpreter exits: left to exit-time destructors,
    gloo's threads sometimes abort the process ("terminate called without an active exception")."""
    try:
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - already torn down, or never fully up
        pass


def run_part(process, batch: list, spec, apply) -> tuple[str, object]:
    """Run ``process`` on one process's batch; failures come back as values, not exceptions,
    so that no process is left waiting in a collective call."""
    if not batch:
        return "ok", []
    try:
        return "ok", apply(process, batch, spec)
    except CQError as err:  # pickles with its where/record_id (exceptions carry their __dict__)
        return "error", err
    except Exception as err:  # noqa: BLE001 - reported by the main process
        if env("CQ_DEBUG"):
            import traceback

            traceback.print_exc()
        return "error", CQError(f"{type(err).__name__}: {err}", f"lines {batch[0].lineno}-{batch[-1].lineno}")
