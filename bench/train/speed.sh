#!/bin/bash
# CPU throughput of the papers' seq2seq trainers (spanseqgen, qd, fid) on a random 14M-parameter BART: 20 steps
# of 8 on 240 AmbigNQ dev questions with their top 20 BM25 passages from the shared corpus (docs/benchmarks/train.md).
set -e
W=${1:?usage: speed.sh WORKDIR (run from a checkout root)}; mkdir -p $W
export PYTHONPATH=$PWD CHECK_CHECKOUT=0
CQ=".venv/bin/python -m cqtools"
T=$W
$CQ convert ambignq ../shared/data/ambignq/dev_light.json 2>/dev/null | head -300 > $T/dev.jsonl
[ -d $T/idx ] || $CQ index --corpus ../shared/data/corpus/passages.jsonl --out $T/idx -q 2> $T/index.err
$CQ retrieve --index $T/idx --hits 20 -q < $T/dev.jsonl > $T/dev.ret.jsonl
head -240 $T/dev.ret.jsonl > $T/train.ret.jsonl; tail -60 $T/dev.ret.jsonl > $T/heldout.ret.jsonl
.venv/bin/python - $T/smallbart <<'PY'
import sys, torch
from transformers import AutoTokenizer, BartConfig, BartForConditionalGeneration
from cqtools.models.resolve import resolve
tok = AutoTokenizer.from_pretrained(resolve("sentence-transformers/all-MiniLM-L6-v2", announce=False).path)
tok.bos_token, tok.eos_token = "[CLS]", "[SEP]"
torch.manual_seed(0)
m = BartForConditionalGeneration(BartConfig(vocab_size=len(tok), d_model=256, encoder_layers=3, decoder_layers=3,
    encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=1024, decoder_ffn_dim=1024,
    max_position_embeddings=1100, pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id,
    eos_token_id=tok.sep_token_id, decoder_start_token_id=tok.sep_token_id, forced_eos_token_id=None))
m.save_pretrained(sys.argv[1]); tok.save_pretrained(sys.argv[1])
print("params", sum(p.numel() for p in m.parameters()))
PY
for task in spanseqgen qd fid; do
  extra=""; [ $task = fid ] && extra="--passages 20"
  /usr/bin/time -f "$task wall %e s, max rss %M KB" $CQ train $task --model $T/smallbart --train $T/train.ret.jsonl \
    --dev $T/heldout.ret.jsonl --dev-limit 20 --batch-size 8 --max-steps 20 --seed 1 --out $T/$task --overwrite $extra -q > $T/$task.json
  cat $T/$task.json; echo
done
