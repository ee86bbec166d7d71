#!/bin/bash
# Whole-process BM25 side by side, alternating: cq retrieve from an older code tree ("before"), cq retrieve
# from this checkout ("after"), and bench/bm25_process.py's bm25s peer; the 1-min load average before each run,
# wall and user/system CPU seconds from /usr/bin/time. Run `make bench-bm25-process` once first (it converts
# the questions and builds the index under WORK).
#   bench/bm25_side_by_side.sh BEFORE_DIR [ROUNDS] [DATA] [WORK]
#   e.g.  mkdir -p work/before && git archive ee408e5 cqtools | tar -x -C work/before
#         bench/bm25_side_by_side.sh work/before 5
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BEFORE=$(cd "$1" && pwd); ROUNDS=${2:-5}; DATA=$(cd "${3:-$ROOT/../shared/data}" && pwd); WORK=$(cd "${4:-$ROOT/work/bench-bm25}" && pwd)
PY=$ROOT/.venv/bin/python
CQ="-m cqtools retrieve --index $WORK/index --method bm25 --hits 100 -q"
cd /tmp  # `python -m` puts the working directory first on sys.path: keep both checkouts off it
for round in $(seq "$ROUNDS"); do
  for who in before after bm25s; do
    case $who in
      before) cmd="env PYTHONPATH=$BEFORE $PY $CQ";;
      after) cmd="env PYTHONPATH=$ROOT $PY $CQ";;
      bm25s) cmd="$PY $ROOT/bench/bm25_process.py --data $DATA --work $WORK --k 100 --peer $DATA/corpus/passages.jsonl";;
    esac
    load=$(cut -d' ' -f1 /proc/loadavg)
    times=$( { /usr/bin/time -f "%e %U %S" $cmd < "$WORK/train.jsonl" > "$WORK/side.$who.jsonl"; } 2>&1 | tail -1)
    read -r wall user sys <<< "$times"
    echo "round $round $who load $load wall $wall s CPU $(echo "$user + $sys" | bc) s (user $user sys $sys)"
    sleep 1
  done
done
cmp "$WORK/side.before.jsonl" "$WORK/side.after.jsonl" && echo "before and after: byte-identical records"
