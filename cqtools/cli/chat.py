"""`cq chat`: a terminal session: ask, pick an interpretation, get the answer and its passage."""
from __future__ import annotations

import contextlib
import itertools
import os
import sys
import threading

import click

from .declared import declared_flags
from .options import compose, device_options, load_options, seed_option
from ..chat.session import ChatOptions
from ..errors import InputError
from ..config import env
from ..registry import CQ_METHODS, DETECTORS, READERS, SEARCHERS
from ..terminal import safe


class Spinner:
    """A spinner with the current step on stderr while a stage works (only on a terminal).

    While it spins, whatever else writes to stderr (our log lines, a library's warnings, the JVM's
    messages: anything on file descriptor 2) goes through a pipe and is written above it: the
    spinner's line is cleared first and redrawn on its next frame, so no line is ever printed over
    it. ``fd`` is the descriptor it draws on (tests pass another)."""

    FRAMES = "|/-\\"

    def __init__(self, enabled: bool, fd: int = 2):
        self.enabled = enabled
        self.fd = fd

    @contextlib.contextmanager
    def __call__(self, label: str):
        if not self.enabled:
            yield
            return
        sys.stderr.flush()
        real = os.dup(self.fd)            # the terminal
        read_end, write_end = os.pipe()
        os.dup2(write_end, self.fd)       # everyone else's stderr now goes through the pipe
        os.close(write_end)
        lock = threading.Lock()
        stop = threading.Event()

        def spin():
            for frame in itertools.cycle(self.FRAMES):
                with lock:
                    os.write(real, f"\r{frame} {label}...".encode())
                if stop.wait(0.1):
                    break

        def relay():
            while data := os.read(read_end, 65536):
                with lock:
                    os.write(real, b"\r\033[K" + data)

        threads = [threading.Thread(target=spin, daemon=True), threading.Thread(target=relay, daemon=True)]
        for thread in threads:
            thread.start()
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os.dup2(real, self.fd)        # the pipe's last write end closes: the relay drains it and stops
            stop.set()
            for thread in threads:
                thread.join(timeout=2)    # a child process still holding the pipe must not hang the session
            os.write(real, b"\r\033[K")
            os.close(real)
            if not threads[1].is_alive():
                os.close(read_end)


class Console:
    """The person at the terminal: lines read with readline editing, answers in bold."""

    def __init__(self, color: bool):
        self.color = color
        with contextlib.suppress(ImportError):
            import readline  # noqa: F401  (line editing and history for input())

    def read(self, prompt: str) -> str:
        return input(prompt)

    def write(self, line: str = "") -> None:
        click.echo(safe(line, keep=STYLES))  # records' text is untrusted: its escapes are shown, not run

    def mark(self, text: str) -> str:
        return click.style(text, bold=True, reverse=True) if self.color else f"[{text}]"


STYLES = ("\x1b[1m", "\x1b[7m", "\x1b[0m")  # what mark()'s click.style adds: bold, reverse, reset


class Script(Console):
    """Inputs from a file, one line per thing typed, echoed after their prompt; its end is Ctrl-D."""

    scripted = True  # a turn that fails ends the session (cqtools/chat/dialogue.py chat_loop)

    def __init__(self, path: str, color: bool):
        super().__init__(color)
        self.path = path
        self.lineno = 0
        with open(path, "rb") as fh:
            data = fh.read()
        try:
            self.lines = iter(data.decode("utf-8").splitlines())
        except UnicodeDecodeError as err:
            line = data[:err.start].count(b"\n") + 1
            raise InputError(f"--script {path} line {line}: not UTF-8 text (byte {data[err.start]:#04x}); "
                                   "save the file as UTF-8") from None

    def read(self, prompt: str) -> str:
        line = next(self.lines, None)
        if line is None:
            raise EOFError
        self.lineno += 1
        click.echo(safe(prompt + line))
        return line

    def where(self) -> str:
        return f"--script {self.path} line {self.lineno}"


def _models(model, detect_method, detect_model, gen_cq_method, gen_cq_model, reader_name, reader_model) -> dict:
    """--model names every causal LM of the session (llm detector, llm CQ writer, a reader that is
    not --reader extractive) unless that stage's own --*-model option was typed; without --gen-cq, cq gen-cq's
    default CQ writer for the LM named (pred-answers when none is)."""
    from ..stages.gen_cq import default_method

    gen_cq_method = gen_cq_method or default_method(model or gen_cq_model)
    source = click.get_current_context().get_parameter_source
    typed = {name: source(name) is click.core.ParameterSource.COMMANDLINE
             for name in ("detect_model", "gen_cq_model", "reader_model")}
    if model:
        if detect_method == "llm" and not typed["detect_model"]:
            detect_model = model
        if gen_cq_method == "llm" and not typed["gen_cq_model"]:
            gen_cq_model = model
        if reader_name != "extractive" and not typed["reader_model"]:
            reader_model = model
    return {"detect_model": detect_model, "gen_cq": gen_cq_method, "gen_cq_model": gen_cq_model,
            "reader_model": reader_model}


@click.command(name="chat")
@click.option("--index", "index_dir", required=True, type=click.Path(readable=False), envvar="CQ_INDEX",
              help="A `cq index` directory (or a Pyserini prebuilt index name), opened once per session.")
@declared_flags(ChatOptions, "retrieve", "hits", "rerank_top", "reranker", "detect", "detect_model", "threshold",
                "gen_cq", "gen_cq_model", "reader", "reader_model",
                params={"retrieve": "retrieve_method", "detect": "detect_method", "gen_cq": "gen_cq_method",
                        "reader": "reader_name"},
                types={"retrieve": click.Choice(SEARCHERS.names()), "detect": click.Choice(DETECTORS.names()),
                       "gen_cq": click.Choice(CQ_METHODS.names()), "reader": click.Choice(["auto", *READERS.names()])})
@click.option("--model", default=None, help="One causal LM for the llm detector, the llm CQ writer and the reader "
                                            "(a stage's own --*-model wins) [default: each role's, SmolLM2].")
@declared_flags(ChatOptions, "n_passages")
@click.option("--log", "log_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Append each finished turn to FILE as one record (JSONL, flushed per turn).")
@click.option("--script", "script_path", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="Read what the person types from FILE, one line per input (questions, picks, texts); "
                   "a line holding a JSON record is a question with its id and gold. Its end ends the session.")
@click.option("--replay", "replay_path", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="Run the turns of a --log FILE again with these options and the person's recorded choices.")
@click.option("--study", is_flag=True,
              help="AskCQ-style human evaluation over --questions: per question, the CQ presentation and the "
                   "multiple-answers one in random order (--seed), then which helped more (cq score --task study).")
@click.option("--questions", "questions_path", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="--study: the questions (JSONL records, e.g. from cq convert).")
@click.option("-q", "--quiet", is_flag=True, help="No spinner.")
@compose(device_options, load_options, seed_option)
def cli(index_dir, retrieve_method, hits, rerank_top, reranker, detect_method, detect_model, threshold,
        gen_cq_method, gen_cq_model, reader_name, reader_model, model, n_passages, log_path, script_path,
        replay_path, study, questions_path, quiet, device, dtype, seed):
    """Ask questions in the terminal: cq retrieves, detects ambiguity and, when the question is
    ambiguous, asks which interpretation you mean (numbered options, "other: type your own", "show
    all answers"), then answers it with the passage sentence the answer came from.

    Defaults: hybrid retrieval of 10 passages, rerank to 3, the classifier detector (cq detect's default, as in
    `make demo`: the one trained here, else the shipped one), cq gen-cq's grounded CQ writer (pred-answers: the reader's distinct
    answers or their passages' titles in a template, no LM; --model or --gen-cq-model names an LM that
    writes the CQ instead) and cq answer's reader (the extractive one installed in $CQ_MODELS/reader, else the shipped one). Models load once; Ctrl-C cancels the turn in flight and returns to the prompt,
    Ctrl-D (or Ctrl-C at the prompt) ends the session, and every finished turn is already in --log.

    \b
    Examples:
      cq chat --index idx --log session.jsonl
      cq chat --index idx --replay session.jsonl --detect always --log again.jsonl
      cq chat --index idx --detect never --script inputs.txt --log out.jsonl
      cq chat --index idx --study --questions questions.jsonl --log study.jsonl
      cq score --task study < study.jsonl
    """
    from .. import chat

    if study and not questions_path:
        raise click.UsageError("--study needs --questions FILE")
    if questions_path and not study:
        raise click.UsageError("--questions goes with --study")
    if replay_path and (study or script_path):
        raise click.UsageError("--replay takes neither --study nor --script")
    if detect_method in ("answers", "tree"):
        raise click.UsageError(f"--detect {detect_method} reads keys a chat turn does not have "
                               "(cq answer --mode multi / cq disambiguate); pick another detector")
    models = _models(model, detect_method, detect_model, gen_cq_method, gen_cq_model, reader_name, reader_model)
    color = sys.stdout.isatty() and not env("NO_COLOR")
    term = Script(script_path, color) if script_path else Console(color)
    spinner = Spinner(enabled=not quiet and sys.stderr.isatty())
    opts = chat.ChatOptions(index_dir=index_dir, retrieve=retrieve_method, hits=hits, rerank_top=rerank_top,
                            reranker=reranker, detect=detect_method, threshold=threshold,
                            reader=reader_name, n_passages=n_passages, device=device, dtype=dtype, seed=seed,
                            all_records=study, **models)
    log = chat.TurnLog(log_path)
    try:
        from .options import run_config

        session = chat.Session(opts, status=spinner, config=run_config())  # the command's configuration
        if replay_path:
            chat.replay_loop(session, term, log, chat.replay_inputs(chat.read_log(replay_path)))
        elif study:
            chat.study_loop(session, term, log, chat.read_log(questions_path), seed=seed)
        else:
            if not script_path:
                click.echo("Ask a question (Ctrl-C cancels a turn, Ctrl-D ends).")
            chat.chat_loop(session, term, log)
    except EOFError:
        click.echo()
    except KeyboardInterrupt:
        click.echo("\ninterrupted", err=True)
        _done(log, log_path)
        sys.exit(130)
    _done(log, log_path)


def _done(log, log_path) -> None:
    log.close()
    if log_path:
        click.echo(f"{log.written} turn(s) in {log_path}", err=True)
