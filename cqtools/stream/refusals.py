"""A run whose every record a server refused ends non-zero.

Under ``--on-error skip`` a request the API server refuses (a 4xx: a prompt over its context, a body
it cannot take) sets that record aside, written through with the reason, and the run goes on: one
record's problem. When every record of the run was refused that way, the records are still written
(nothing is lost), but the run did nothing, and a script must not read it as success: the stream
ends with a one-line :class:`~cqtools.errors.ServiceError`.
"""
from __future__ import annotations

from ..errors import ServiceError


def counts(err) -> int:
    """1 when ``err`` (a record's error under --on-error skip) is a server's refusal of its request."""
    from ..models.api import RequestError

    return int(isinstance(err, RequestError))


def check(refused: int, processed: int, desc: str) -> None:
    if refused and refused >= processed:
        raise ServiceError(f"{desc}: the server refused the requests of every one of the {refused} records (their "
                           f"reasons are under 'errors' in the output); check the model, its context length and "
                           f"--api-base")
