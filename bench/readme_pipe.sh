#!/bin/bash
# README's default pipeline on a question file, for timing two settings against each other in one run
# (docs/benchmarks/first-contact.md, "Speed of the default"):
#   bench/readme_pipe.sh INDEX QUESTIONS HITS READER OUT [METHOD]
# INDEX: a `cq index` folder; HITS: retrieved and reranked to 10; READER: the extractive reader's folder
# (CQ_MODEL_READER); METHOD: retrieval (default hybrid, README's; bm25 for an index without vectors).
set -eo pipefail
cd "$(dirname "$0")/.."
index=$1 questions=$2 hits=$3 reader=$4 out=$5 method=${6:-hybrid}
export CQ_OFFLINE=1 HF_HUB_OFFLINE=1 CQ_MODEL_READER=$reader
CQ=.venv/bin/cq
$CQ retrieve --index "$index" --method "$method" --hits "$hits" -q < "$questions" | $CQ rerank --top 10 -q \
  | $CQ detect -q | $CQ gen-cq -q | $CQ answer --mode cq -q > "$out"
