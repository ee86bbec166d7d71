"""`cq score --by FIELD`: the group of a record, and the check of FIELD."""
from __future__ import annotations

from ..errors import InputError

NO_VALUE = "(none)"  # the --by group of a record without the field (or with null there)


def group_of(record: dict, path: str) -> str:
    """The ``--by`` group of ``record``: the value at the dotted key ``path`` (a string as it is,
    anything else as JSON), or :data:`NO_VALUE` where the record lacks it. A string that would read as
    another group's name (``"1"`` beside 1, ``"true"``, a literal ``"(none)"``: any string that is JSON
    itself, or NO_VALUE) is shown as JSON, quoted, so different values never share a group."""
    import orjson

    value = record
    for key in path.split("."):
        if not isinstance(value, dict) or value.get(key) is None:
            return NO_VALUE
        value = value[key]
    if isinstance(value, str) and value != NO_VALUE and not _reads_as_json(value):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _reads_as_json(text: str) -> bool:
    import orjson

    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def check_by(path: str | None) -> str | None:
    """``--by``'s dotted key path, or :class:`InputError` for one with an empty key ('', '.', 'gold..type')."""
    if path is not None and not all(key.strip() for key in path.split(".")):
        raise InputError(f"--by {path!r}: not a dotted key path (an empty key); pass one such as gold.type or "
                         "dataset")
    return path
