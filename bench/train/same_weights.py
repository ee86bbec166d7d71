"""sha256 of the weights each `cq train` kind writes for a tiny seeded run, to compare two checkouts' loops
(docs/benchmarks/train.md: the accelerate loop against the plain-torch one it replaced).

Usage, from a checkout's root: PYTHONPATH=$PWD CQ_OFFLINE=1 .venv/bin/python bench/train/same_weights.py OUTDIR
prints one line per kind (kind, steps, sha256); run it in the other checkout and diff the two outputs.
Random tiny models from configurations (seeded), the shipped MiniLM for one detect run, fixtures/ for data.
"""
import hashlib, json, os, sys
import torch
from click.testing import CliRunner
from transformers import (AutoTokenizer, BertConfig, BertForQuestionAnswering, BertForSequenceClassification,
                          LlamaConfig, LlamaForCausalLM, T5Config, T5ForConditionalGeneration)
from cqtools.cli import cli
from cqtools.models.resolve import resolve
from cqtools.train.loop import keep_model_inputs

root = sys.argv[1]
os.makedirs(root, exist_ok=True)
Q = "fixtures/questions.jsonl"
tok = AutoTokenizer.from_pretrained(resolve("sentence-transformers/all-MiniLM-L6-v2", announce=False).path)

def save(name, build):
    out = os.path.join(root, "base-" + name)
    torch.manual_seed(0)
    m = build()
    m.save_pretrained(out); tok.save_pretrained(out); keep_model_inputs(out, m)
    return out

bert = dict(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
models = {
    "detect": save("clf", lambda: BertForSequenceClassification(BertConfig(**bert, num_labels=2))),
    "reader": save("qa", lambda: BertForQuestionAnswering(BertConfig(**bert))),
    "gen-cq": save("t5", lambda: T5ForConditionalGeneration(T5Config(
        vocab_size=len(tok), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, pad_token_id=tok.pad_token_id,
        eos_token_id=tok.sep_token_id, decoder_start_token_id=tok.pad_token_id))),
    "gen-cq-causal": save("llama", lambda: LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=1024, pad_token_id=tok.pad_token_id,
        bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id))),
}
corpus = [json.loads(l) for l in open("fixtures/corpus.jsonl")]
with_passages = os.path.join(root, "ret.jsonl")
with open(with_passages, "w") as fh:
    for line in open(Q):
        r = json.loads(line)
        words = set(r["question"].lower().split())
        ranked = sorted(corpus, key=lambda p: (-len(words & set((p["title"] + " " + p["text"]).lower().split())), p["id"]))
        fh.write(json.dumps({**r, "passages": ranked[:5]}) + "\n")
runs = {
    "detect": ["train", "detect", "--train", Q, "--dev", Q, "--dev-limit", "6", "--max-steps", "5", "--batch-size", "4",
               "--eval-every", "2", "--seed", "2"],
    "detect-minilm": ["train", "detect", "--model", "sentence-transformers/all-MiniLM-L6-v2", "--train", Q, "--dev", Q,
                      "--limit", "16", "--dev-limit", "4", "--max-steps", "2", "--batch-size", "8", "--seed", "1"],
    "gen-cq": ["train", "gen-cq", "--train", Q, "--dev", Q, "--dev-limit", "2", "--max-steps", "6", "--batch-size", "4",
               "--seed", "3"],
    "gen-cq-causal": ["train", "gen-cq", "--train", Q, "--dev", Q, "--dev-limit", "2", "--max-steps", "4",
                      "--batch-size", "4", "--seed", "3"],
    "reader": ["train", "reader", "--train", with_passages, "--holdout", "5", "--max-steps", "5", "--batch-size", "4",
               "--eval-every", "2", "--seed", "4"],
}
for kind, args in runs.items():
    out = os.path.join(root, kind)
    base = models.get(kind, models.get(kind.split("-minilm")[0]))
    if "--model" not in args:
        args = [*args, "--model", base]
    res = CliRunner().invoke(cli, [*args, "--out", out, "-q"])
    assert res.exit_code == 0, res.output
    digest = hashlib.sha256(open(os.path.join(out, "model.safetensors"), "rb").read()).hexdigest()
    steps = json.load(open(os.path.join(out, "cq_train.json")))["steps"]
    print(kind, steps, digest, flush=True)
