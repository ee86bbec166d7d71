"""The ``cq`` command group. Subcommands are imported only when they are run (or listed),
and no subcommand module imports torch, transformers or pyserini at import time, so
``cq --help`` stays instant."""
from __future__ import annotations

import errno
import importlib
import logging
import os
import sys

import click

from .. import __version__
from ..config import env
from ..errors import CQError
from ..terminal import safe

# name -> module under cqtools.cli; order is the order of a pipeline.
COMMANDS = {
    "convert": "convert",
    "index": "index",
    "encode": "encode",
    "retrieve": "retrieve",
    "rerank": "rerank",
    "detect": "detect",
    "gen-cq": "gen_cq",
    "answer": "answer",
    "disambiguate": "disambiguate",
    "oracle": "oracle",
    "chat": "chat",
    "score": "score",
    "train": "train",
    "show": "show",
    "view": "view",
    "merge": "merge",
    "models": "models",
    "data": "data",
    "cache": "cache",
    "plugins": "plugins",
    "presets": "presets",
    "pyserini": "pyserini",
    "indexes": "indexes",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        module = COMMANDS.get(name)
        if module is None:
            return None
        return importlib.import_module(f"{__name__}.{module}").cli

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)  # the command builds its run configuration (options.run_config)
        except CQError as err:
            if env("CQ_DEBUG"):
                raise
            name = ctx.invoked_subcommand or "cq"
            click.echo(f"cq {name}: error: {safe(err, one_line=True)}", err=True)
            ctx.exit(err.exit_code)
        except BrokenPipeError:
            # The reader went away (`cq ... | head -1`): end quietly with status 0, as documented in
            # docs/schema.md, so `set -o pipefail` scripts and make do not read it as a failure.
            _silence_stdout()
            ctx.exit(0)
        except OSError as err:
            if err.errno not in FULL or env("CQ_DEBUG"):
                raise
            name = ctx.invoked_subcommand or "cq"
            click.echo(f"cq {name}: error: {_full_message(err)}", err=True)
            _silence_stdout()
            ctx.exit(1)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100,
                                             "terminal_width": 100})
@click.version_option(__version__, prog_name="cq")
def cli():
    """cq: answer ambiguous open-domain questions with shell pipelines.

    Every command reads JSONL records on stdin and writes them on stdout, adding its
    own keys and passing all others through. A typical run:

    \b
        cq convert ambignq dev_light.json > questions.jsonl
        cq index --corpus passages.jsonl --out idx
        cq retrieve --index idx < questions.jsonl | cq rerank | cq detect \\
          | cq gen-cq | cq answer --mode cq | cq score --task cbqa

    Set CQ_DEBUG=1 to see tracebacks instead of one-line errors.
    """
    share_cores()
    quiet_libraries()
    logger = logging.getLogger("cqtools")
    if not logger.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("cq: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    # every command starts at INFO (its -q lowers it): an earlier command's -q in the same process (CliRunner,
    # a Python caller) does not silence the next one
    logger.setLevel(logging.INFO)


class _StderrHandler(logging.StreamHandler):
    """Always writes to the current sys.stderr (which tests and redirections may swap); a message's
    control characters (records' ids and text in warnings) are shown as escapes, never run."""

    def format(self, record) -> str:
        return safe(super().format(record))

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def share_cores() -> None:
    """OpenMP threads (torch, faiss) sleep when idle instead of spinning, unless OMP_WAIT_POLICY is
    set. The stages of a pipeline are processes on the same cores; spinning threads of one stage
    hold the cores another needs, and every parallel op then waits for descheduled threads
    (docs/benchmarks/threads.md). Set before torch loads: libgomp reads it once."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def quiet_libraries() -> None:
    """Library chatter (weight-loading bars, advisory warnings) off unless CQ_DEBUG is set."""
    if env("CQ_DEBUG"):
        return
    for key, value in {"TRANSFORMERS_VERBOSITY": "error", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
                       "TOKENIZERS_PARALLELISM": "false", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1"}.items():
        os.environ.setdefault(key, value)
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)


def _terminated(signum, frame) -> None:
    """SIGTERM (SLURM's time limit, ``timeout``, ``kill``) and SIGHUP end a run as Ctrl-C does: the
    cleanup of every ``finally`` runs (``-o`` and index temp files removed, --resume's run record
    left incomplete), then exit 128 + the signal's number. A ``--resume`` lock is marked ending first:
    a requeued job started meanwhile on the same output waits for this process to end (resume_lock.lock)."""
    held = sys.modules.get("cqtools.resume_lock")  # imported by every run that took one
    if held is not None:
        held.mark_ending()
    raise SystemExit(128 + signum)


FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # the disk (or a quota, or a file size limit) is full


def _full_message(err: OSError) -> str:
    where = f" writing {err.filename}" if err.filename else ""
    return (f"{os.strerror(err.errno).lower()}{where}; what was written before stays (a -o file keeps its old "
            "content, a --resume output continues where it stopped); free space and run again")


def ahead() -> list[str]:
    """What a process that runs many cq commands (the fork server) does ahead of them: the environment defaults cq
    sets before torch loads (libgomp reads them once); returns the command modules to import."""
    share_cores()
    quiet_libraries()
    return [f"cqtools.cli.{module}" for module in COMMANDS.values()]


def main() -> None:
    """cq in this process: quiet on a closed pipe (``cq ... | head -1``); SIGTERM and SIGHUP clean up. The console
    entry point (cqtools/forkserver/client.py ``cq``) first offers the run to a fork server when CQ_SERVER is set."""
    import signal

    _closed_streams()

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _terminated)
    try:
        cli.main(prog_name="cq")
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(0)
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _silence_stdout()
        except OSError as err:  # the last buffered records did not fit on the disk
            if err.errno not in FULL:
                raise
            click.echo(f"cq: error: {_full_message(err)}", err=True)
            _silence_stdout()
            sys.exit(1)


def _closed_streams() -> None:
    """A closed standard stream (``<&-``, ``>&-``, ``2>&-``): Python leaves sys.stdin, sys.stdout or sys.stderr
    None. Its number is held open on /dev/null (no file this run opens becomes descriptor 0, 1 or 2). Output
    closed is one line and exit 2; input closed is an error only for a stage that reads it
    (cli/stream.click_stdin); stderr closed: messages go nowhere, the exit status still tells."""
    for fd, flags in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            held = os.open(os.devnull, flags)
            if held != fd:
                os.dup2(held, fd)
                os.close(held)
    if sys.stderr is None:
        sys.stderr = open(2, "w", closefd=False)
    if sys.stdout is None:
        click.echo("cq: error: standard output is closed (>&-); give the records somewhere to go: > FILE, "
                   "-o FILE or a pipe", err=True)
        sys.exit(2)


def _silence_stdout() -> None:
    # Python flushes stdout again at exit; point it at devnull so that flush cannot fail.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
