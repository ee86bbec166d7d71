"""Best-checkpoint selection changes nothing without --dev: the weights of `cq train spanseqgen | qd | fid` (no
--dev) and of `cq train gen-cq` (--dev, one epoch: one evaluation, at the last step) trained by an older checkout
and by this one, tiny random models, compared tensor by tensor (docs/benchmarks/train.md).

    git archive 7b8eb1a | tar -x -C OLD && python bench/train/same_without_dev.py OLD WORK
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, HERE)
from tests.conftest import _save_tiny_model
from tests.test_train_resume import with_near_passages, QUESTIONS
from transformers import BartConfig, BartForConditionalGeneration, T5Config, T5ForConditionalGeneration
OLD, W = sys.argv[1], sys.argv[2]
os.makedirs(W, exist_ok=True)
def bart(tok):
    tok.bos_token, tok.eos_token = "[CLS]", "[SEP]"
    return BartForConditionalGeneration(BartConfig(vocab_size=len(tok), d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
        max_position_embeddings=1100, pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id,
        eos_token_id=tok.sep_token_id, decoder_start_token_id=tok.sep_token_id, forced_eos_token_id=None))
def t5(tok):
    return T5ForConditionalGeneration(T5Config(vocab_size=len(tok), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.sep_token_id, decoder_start_token_id=tok.pad_token_id))
b = _save_tiny_model(W + "/bart", bart); t = _save_tiny_model(W + "/t5", t5)
rec = with_near_passages(W + "/ret.jsonl")
runs = {"spanseqgen": ["train", "spanseqgen", "--model", b, "--train", rec, "--batch-size", "3", "--max-steps", "6", "--max-input-tokens", "256"],
        "qd": ["train", "qd", "--model", b, "--train", rec, "--batch-size", "3", "--max-steps", "6", "--max-input-tokens", "256"],
        "fid": ["train", "fid", "--model", b, "--train", rec, "--batch-size", "3", "--max-steps", "6", "--passages", "2"],
        "gen-cq": ["train", "gen-cq", "--model", t, "--train", QUESTIONS, "--dev", QUESTIONS, "--dev-limit", "2", "--batch-size", "3"]}
import torch
from safetensors.torch import load_file
for name, args in runs.items():
    outs = []
    for tree in (OLD, HERE):
        out = f"{W}/{name}-{os.path.basename(tree)}"
        subprocess.run(["rm", "-rf", out])
        r = subprocess.run([sys.executable, "-m", "cqtools", *args, "--seed", "5", "--out", out, "-q"], cwd=tree,
                           env={**os.environ, "PYTHONPATH": tree, "CHECK_CHECKOUT": "0"}, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]
        outs.append(load_file(out + "/model.safetensors"))
    a, c = outs
    same = a.keys() == c.keys() and all(torch.equal(a[k], c[k]) for k in a)
    print(name, "identical weights" if same else "DIFFERENT", len(a), "tensors", flush=True)
