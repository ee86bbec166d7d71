"""``cq view``: a local web page over runs (JSONL files of records) and human judgements of them.

:mod:`.index` scans a run once for each line's byte offset and a small summary (id, question,
ambiguity, per-record metrics); :mod:`.pages` turns records into escaped HTML; :mod:`.study` keeps
a judgement study's items and its append-only JSONL log; :mod:`.server` is the standard library's
``http.server`` routing requests to them. No record is loaded for a page except those it shows."""
