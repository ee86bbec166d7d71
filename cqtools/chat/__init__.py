"""`cq chat`: a person asks, cq clarifies and answers, one record per turn.

A turn is one record through the stages built once per session (:class:`Session`): retrieve,
rerank, detect, gen-cq, then answer ``--mode cq`` for the option the person picked (``--selected``),
for every option ("show all answers"), or for the question itself when nothing is asked. The
record keeps the pipeline's schema (docs/schema.md) plus ``selected_option`` (the picked option, or
the text typed under "other", also in ``clarification_answer``) and ``meta.chat`` (how the person
chose), so a log is read by ``cq show`` and ``cq score`` and replayed by :func:`replay_inputs`.

The dialogue (:func:`chat_loop`, :func:`study_loop`) talks to a :class:`Terminal` (cqtools/cli/chat.py
has the real one and the scripted one) and appends each finished turn to a :class:`TurnLog`,
one flushed JSON line, so an interrupted session keeps every turn it finished.
"""
from .dialogue import (Terminal, chat_loop, clarify_and_answer, pick, replay_loop, study_loop)  # noqa: F401
from .session import (CHOICES, NO_ANSWER, OTHER, SHOW_ALL, ChatOptions, Session, TurnLog, evidence,  # noqa: F401
                      grounded, options_of, read_log, render_answers, render_cq, replay_inputs)
