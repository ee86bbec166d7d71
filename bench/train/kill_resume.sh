#!/bin/bash
# A real SIGKILL in the middle of `cq train gen-cq`, then --resume: the weights' sha256 against an
# uninterrupted run of the same command (docs/benchmarks/train.md). Run from a checkout's root:
#   bash bench/train/kill_resume.sh WORKDIR
# It first builds the tiny seeded T5 of same_weights.py (WORKDIR/base-t5).
set -u
W=${1:?usage: kill_resume.sh WORKDIR}
export CQ_OFFLINE=1 PYTHONPATH=$PWD
mkdir -p "$W"
[ -d "$W/base-t5" ] || .venv/bin/python bench/train/same_weights.py "$W" > /dev/null
rm -rf "$W/whole" "$W/parted"
ARGS="train gen-cq --model $W/base-t5 --train fixtures/questions.jsonl --dev fixtures/questions.jsonl --dev-limit 2 --batch-size 2 --epochs 6 --seed 7 -q"
.venv/bin/python -m cqtools $ARGS --out "$W/whole" > /dev/null
.venv/bin/python -m cqtools $ARGS --out "$W/parted" --save-every 5 > /dev/null 2>&1 &
PID=$!
until [ -e "$W/parted/checkpoints/step-20/cq_checkpoint.json" ]; do sleep 0.05; done
kill -9 $PID; wait $PID; echo "killed: exit $?, checkpoints: $(ls "$W/parted/checkpoints" | tr '\n' ' ')"
.venv/bin/python -m cqtools $ARGS --out "$W/parted" --save-every 5 --resume > /dev/null
sha256sum "$W/whole/model.safetensors" "$W/parted/model.safetensors"
