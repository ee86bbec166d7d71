"""Exception types raised by library code; the CLI turns them into one-line messages."""


class CQError(Exception):
    """A user-facing error: the message says what went wrong and what to do.

    ``where`` locates the problem (``line 12``, ``record fx03``) and is put in front of
    the message by the CLI.
    """

    exit_code = 1

    def __init__(self, message: str, where: str | None = None, record_id: str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.record_id = record_id  # lets the stream loop name the record's input line

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class ServiceError(CQError):
    """A service the run depends on failed (an API server down, overloaded after its retries, or
    refusing the key): not any record's fault, so the run stops even under ``--on-error skip``
    (records already written stay; ``--resume`` continues after them)."""


class InputError(CQError):
    """Malformed input: bad JSON, a record lacking a key a stage needs."""


class ResourceError(CQError):
    """Something that must exist does not: an index, a model, a file."""
