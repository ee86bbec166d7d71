"""Local models done right (cqtools/models/runtime.py, resolve.py, generator.py, encoders.py): device
and dtype choice, device maps, quantization, revisions, remote code, the files a hub download
fetches, padding for batched generation and scoring (batched == unbatched), and `cq models`.
Tiny models are built locally (tests/conftest.py); nothing is downloaded. GPU tests skip without one."""
from __future__ import annotations

import importlib
import importlib.util

import pytest

from cqtools.cli import cli
from cqtools.errors import ResourceError
from cqtools.config import RunConfig
from cqtools.models import runtime
from cqtools.models.resolve import ResolvedModel, allow_patterns

from .conftest import _save_tiny_model, parse_jsonl
from .conftest_models import tiny_cross_encoder  # noqa: F401

torch = pytest.importorskip("torch")
GPU = torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not GPU, reason="needs a CUDA GPU")

PROMPTS = ["who is the president", "a much longer prompt with many more words in it than the other one", "hi",
           "which country won the world cup in"]
CONTINUATIONS = [" yes", " no way at all", " maybe", " france"]


# ---------------------------------------------------------------------------------------------
# tiny models of the architectures the padded path must handle


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory) -> str:
    """Absolute position embeddings and a tokenizer with neither a pad nor an eos token."""
    from transformers import GPT2Config, GPT2LMHeadModel

    out = str(tmp_path_factory.mktemp("tinygpt2"))

    def build(tok):
        tok.pad_token = None
        return GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=512,
                                          bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id))

    return _save_tiny_model(out, build)


@pytest.fixture(scope="module")
def tiny_bart(tmp_path_factory) -> str:
    """A seq2seq model with learned absolute positions (T5's are relative)."""
    from transformers import BartConfig, BartForConditionalGeneration

    return _save_tiny_model(str(tmp_path_factory.mktemp("tinybart")), lambda tok: BartForConditionalGeneration(
        BartConfig(vocab_size=len(tok), d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                   decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=512,
                   pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
                   decoder_start_token_id=tok.cls_token_id, forced_eos_token_id=None)))


def _generators(path: str, monkeypatch, device: str = "cpu", dtype: str = "float32"):
    """The same model loaded twice: each input alone, and padded batches (CQ_PADDED_BATCHES=1)."""
    from cqtools.models.generator import LocalGenerator

    resolved = ResolvedModel(path, path, "local", "hf")
    monkeypatch.delenv("CQ_PADDED_BATCHES", raising=False)
    alone = LocalGenerator(resolved, RunConfig.from_env(), device, dtype)
    monkeypatch.setenv("CQ_PADDED_BATCHES", "1")
    padded = LocalGenerator(resolved, RunConfig.from_env(), device, dtype)
    monkeypatch.delenv("CQ_PADDED_BATCHES")
    assert not alone.padded and padded.padded
    return alone, padded


@pytest.mark.parametrize("arch", ["tiny_causal", "tiny_gpt2", "tiny_seq2seq", "tiny_bart"])
def test_padded_batches_equal_unbatched(arch, request, monkeypatch):
    """Left padding (generation, causal), right padding (scoring, seq2seq), attention masks and position
    ids: padded batches give the same log p (within 1e-5) and the same greedy text as one input at a time."""
    alone, padded = _generators(request.getfixturevalue(arch), monkeypatch)
    assert padded.tokenizer.padding_side == ("left" if padded.kind == "causal" else "right")
    prefixes = ["", "Question: "] if alone.kind == "causal" else [""]
    for prefix in prefixes:
        a = alone.score(PROMPTS, CONTINUATIONS, prefix=prefix)
        b = padded.score(PROMPTS, CONTINUATIONS, prefix=prefix, batch_size=4)
        assert max(abs(x - y) for x, y in zip(a, b)) < 1e-5, (prefix, a, b)
        assert all(x < 0 for x in a)
    a = alone.generate(PROMPTS, max_new_tokens=6, chat=False)
    b = padded.generate(PROMPTS, max_new_tokens=6, chat=False, batch_size=4)
    assert a == b
    # and a batch's member equals the same input alone in a padded generator too
    assert padded.score(PROMPTS[:1], CONTINUATIONS[:1], batch_size=1)[0] == pytest.approx(
        padded.score(PROMPTS, CONTINUATIONS, batch_size=4)[0], abs=1e-5)


@pytest.mark.parametrize("arch", ["tiny_causal", "tiny_gpt2"])
def test_the_prefix_cache_goes_under_the_name_transformers_takes(arch, request, monkeypatch):
    """Issue 48: scoring with a shared prefix passed its KV cache as `past_key_values`, which transformers 5
    deprecates (removed in 5.40: "Use `cache` instead"). It now goes under the name the model's forward declares,
    so no deprecation warning is raised and the scores equal those without the cache."""
    import warnings

    alone, _ = _generators(request.getfixturevalue(arch), monkeypatch)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        cached = alone.score(PROMPTS, CONTINUATIONS, prefix="Question: ")
    assert not [w for w in seen if "past_key_values" in str(w.message)], [str(w.message) for w in seen]
    plain = alone._score_causal(PROMPTS, CONTINUATIONS, "Question: ", use_cache=False)
    assert max(abs(x - y) for x, y in zip(cached, plain)) < 1e-4


@pytest.mark.heavy(reason="generates 24 tokens a prompt twice with each tiny architecture (a minute)")
@pytest.mark.parametrize("arch", ["tiny_causal", "tiny_gpt2", "tiny_seq2seq"])
@pytest.mark.parametrize("padded_mode", [False, True])
def test_stop_strings_end_generation_early_with_the_same_text(arch, padded_mode, request, monkeypatch):
    """A stop string ends a row's generation as soon as it appears in the decoded continuation; the text
    returned is exactly the full-length generation cut at the first stop string."""
    alone, padded = _generators(request.getfixturevalue(arch), monkeypatch)
    gen = padded if padded_mode else alone
    full = gen.generate(PROMPTS, max_new_tokens=24, chat=False, batch_size=4)
    words = [w for text in full for w in text.split()[2:6] if len(w) > 1]
    assert words, full
    lengths = []
    real = gen.model.generate

    def counting(**kwargs):
        out = real(**kwargs)
        lengths.append(out.shape[1] - (kwargs["input_ids"].shape[1] if gen.kind == "causal" else 0))
        return out

    monkeypatch.setattr(gen.model, "generate", counting)
    for stop in (words[:1], words[:2] + ["never in the text"]):
        lengths.clear()
        cut = gen.generate(PROMPTS, max_new_tokens=24, chat=False, stop=stop, batch_size=4)
        assert cut == [_cut_text(text, stop) for text in full]
        if not padded_mode:  # a padded batch runs until its last row stops
            assert min(lengths) < 24


def _cut_text(text: str, stop: list[str]) -> str:
    from cqtools.models.cutting import cut_at_stop as _cut

    return _cut(text, stop)


@pytest.mark.parametrize("arch", ["tiny_causal", "tiny_gpt2"])
def test_one_token_continuations_of_one_prompt_share_a_forward_pass(arch, request, monkeypatch):
    """Scoring " yes" and " no" after the same prompt (a True/False verification) runs the prompt once;
    each score is the one the pair gets scored alone."""
    alone, _ = _generators(request.getfixturevalue(arch), monkeypatch)
    one = [t for t in (" yes", " no", " maybe", " france") if len(alone._ids(t)) == 1]
    assert len(one) >= 2, "the tiny tokenizer should have one-token words"
    prompts = [PROMPTS[0]] * len(one) + [PROMPTS[1]] * len(one) + [PROMPTS[0]]
    conts = one + one + [" no way at all"]
    single = [alone.score([p], [c])[0] for p, c in zip(prompts, conts)]
    passes = []
    real = alone._hidden
    monkeypatch.setattr(alone, "_hidden", lambda ids, mask, kw: passes.append(ids.shape) or real(ids, mask, kw))
    for prefix in ("", "Question: "):
        passes.clear()
        together = alone.score(prompts, conts, prefix=prefix)
        assert len(passes) == 3  # one per prompt, one for the multi-token continuation
        if not prefix:
            assert together == single
    assert alone.score(prompts, conts, prefix="Question: ") == [
        alone.score([p], [c], prefix="Question: ")[0] for p, c in zip(prompts, conts)]


def test_pad_token_for_a_tokenizer_without_one(tiny_gpt2, monkeypatch):
    alone, padded = _generators(tiny_gpt2, monkeypatch)
    assert padded.pad_id is not None
    ids, mask = padded._pad([[5, 6, 7], [8]], left=True)
    assert ids[1].tolist() == [padded.pad_id, padded.pad_id, 8] and mask[1].tolist() == [0, 0, 1]


def test_pad_token_falls_back_to_eos():
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from cqtools.models.generator import _pad_token
    from cqtools.models.resolve import resolve

    tok = AutoTokenizer.from_pretrained(resolve("sentence-transformers/all-MiniLM-L6-v2", announce=False).path)
    tok.pad_token = None
    tok.eos_token = "[SEP]"
    assert _pad_token(tok, SimpleNamespace()) == tok.sep_token_id == tok.pad_token_id
    tok.pad_token = tok.eos_token = None
    assert _pad_token(tok, SimpleNamespace(pad_token_id=None, eos_token_id=[7, 9])) == 7


# ---------------------------------------------------------------------------------------------
# device and dtype


def test_device_auto_is_cpu_without_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(runtime, "_mps_available", lambda: False)
    assert runtime.pick_device("auto") == "cpu"
    with pytest.raises(ResourceError, match="--device cpu"):
        runtime.pick_device("cuda")


def test_dtype_auto_is_bf16_only_where_supported(monkeypatch):
    assert runtime.pick_dtype("auto", "cpu") is torch.float32
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert runtime.pick_dtype("auto", "cuda:0") is torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert runtime.pick_dtype("auto", "cuda") is torch.float16
    assert runtime.pick_dtype("float32", "cuda") is torch.float32


def test_encoders_follow_the_device(tiny_cross_encoder, monkeypatch):
    """Every loader takes --device: bi-encoders, cross-encoders (ONNX: CUDA provider when installed)."""
    from cqtools.models.encoders import onnx_providers

    assert onnx_providers("cpu", ["CUDAExecutionProvider", "CPUExecutionProvider"]) == ["CPUExecutionProvider"]
    assert onnx_providers("cuda:1", ["CUDAExecutionProvider", "CPUExecutionProvider"])[0] == (
        "CUDAExecutionProvider", {"device_id": 1})
    assert onnx_providers("cuda", ["CPUExecutionProvider"]) == ["CPUExecutionProvider"]
    from cqtools.models.load import load_cross_encoder

    assert load_cross_encoder(tiny_cross_encoder, "cpu").info["device"] == "cpu"


def test_device_map_only_when_one_gpu_is_too_small():
    gib = 1 << 30
    assert not runtime.wants_device_map(10 * gib, None)            # no GPU: never
    assert not runtime.wants_device_map(10 * gib, 80 * gib)        # fits on one GPU
    assert runtime.wants_device_map(70 * gib, 80 * gib)            # over 80 % of it: spread
    assert not runtime.wants_device_map(70 * gib, 80 * gib, processes=4)  # accelerate launch: one copy each


def test_load_kwargs_on_cpu(tiny_causal):
    kwargs, move = runtime.load_kwargs(tiny_causal, "cpu", torch.float32, RunConfig())
    assert kwargs == {"dtype": torch.float32} and move
    assert runtime.load_kwargs(tiny_causal, "cpu", None, RunConfig(trust_remote_code=True))[0] == \
        {"trust_remote_code": True}
    assert runtime.weights_bytes(tiny_causal) > 0


# ---------------------------------------------------------------------------------------------
# quantization


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is not None, reason="bitsandbytes is installed")
@pytest.mark.parametrize("bits", ["8bit", "4bit"])
def test_quantize_without_bitsandbytes_is_one_clear_line(runner, tiny_causal, bits):
    with pytest.raises(ResourceError, match="pip install bitsandbytes"):
        runtime.quantization_config(bits, "cuda")
    result = runner.invoke(cli, ["models", "--quantize", bits, "--model", tiny_causal])
    assert result.exit_code == 1
    assert result.stderr == f"cq models: error: --quantize {bits} needs bitsandbytes: pip install bitsandbytes " \
                            f"(or leave out --quantize to load full-precision weights)\n"
    result = runner.invoke(cli, ["oracle", "--method", "llm", "--model", tiny_causal, "--quantize", bits],
                           input='{"id": "q1", "question": "Who?"}\n')
    assert result.exit_code == 1 and "pip install bitsandbytes" in result.stderr and "Traceback" not in result.stderr


def test_quantize_needs_a_cuda_device(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "bitsandbytes" else None)
    with pytest.raises(ResourceError, match="needs a CUDA GPU"):
        runtime.quantization_config("4bit", "cpu")


@needs_gpu
@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is None, reason="needs bitsandbytes")
def test_quantized_generator_on_gpu(tiny_causal):
    from cqtools.models.generator import LocalGenerator

    gen = LocalGenerator(ResolvedModel(tiny_causal, tiny_causal, "local", "hf"), RunConfig(quantize="8bit"), "cuda")
    assert gen.info["quantize"] == "8bit" and gen.generate(["hi"], max_new_tokens=2, chat=False)


# ---------------------------------------------------------------------------------------------
# GPU: auto device, bf16, and batched == unbatched there too


@needs_gpu
def test_generator_on_gpu_defaults_to_bf16(tiny_causal, monkeypatch):
    alone, padded = _generators(tiny_causal, monkeypatch, device=runtime.pick_device("auto"), dtype="auto")
    assert alone.device.startswith("cuda")
    assert alone.info["dtype"] == ("bfloat16" if torch.cuda.is_bf16_supported() else "float16")
    assert alone.generate(PROMPTS, max_new_tokens=4, chat=False) == padded.generate(PROMPTS, max_new_tokens=4,
                                                                                     chat=False)


@needs_gpu
def test_padded_scores_equal_unbatched_on_gpu_fp32(tiny_causal, monkeypatch):
    alone, padded = _generators(tiny_causal, monkeypatch, device="cuda", dtype="float32")
    a, b = alone.score(PROMPTS, CONTINUATIONS), padded.score(PROMPTS, CONTINUATIONS, batch_size=4)
    assert max(abs(x - y) for x, y in zip(a, b)) < 1e-4


@needs_gpu
def test_encoder_auto_device_is_the_gpu():
    from cqtools.models.load import load_encoder

    encoder = load_encoder("sentence-transformers/all-MiniLM-L6-v2", "auto")
    assert str(encoder.model.device).startswith("cuda")


# ---------------------------------------------------------------------------------------------
# revision, remote code, the files a download fetches


ST_REPO = ["1_Pooling/config.json", "README.md", "config.json", "config_sentence_transformers.json",
           "data_config.json", "model.safetensors", "modules.json", "onnx/model.onnx", "onnx/model_O1.onnx",
           "openvino/openvino_model.bin", "openvino/openvino_model.xml", "pytorch_model.bin", "rust_model.ot",
           "sentence_bert_config.json", "special_tokens_map.json", "tf_model.h5", "tokenizer.json",
           "tokenizer_config.json", "train_script.py", "vocab.txt", "2_Normalize/.gitkeep"]


def test_allow_patterns_sentence_transformers_repo():
    assert allow_patterns(ST_REPO) == [
        "1_Pooling/config.json", "2_Normalize/.gitkeep", "config.json", "config_sentence_transformers.json",
        "model.safetensors", "modules.json", "sentence_bert_config.json", "special_tokens_map.json",
        "tokenizer.json", "tokenizer_config.json", "vocab.txt"]


def test_allow_patterns_sharded_safetensors_over_bin_and_flax():
    repo = [".gitattributes", "config.json", "generation_config.json", "flax_model.msgpack",
            "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json",
            "pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin", "pytorch_model.bin.index.json",
            "tokenizer.model", "tokenizer_config.json", "modeling_custom.py", "configuration_custom.py"]
    assert allow_patterns(repo) == [
        "config.json", "generation_config.json", "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors", "model.safetensors.index.json", "tokenizer.model",
        "tokenizer_config.json"]
    # the repo's own code only with --trust-remote-code
    assert {"modeling_custom.py", "configuration_custom.py"} <= set(allow_patterns(repo, trust_remote_code=True))


def test_allow_patterns_bin_only_repo():
    repo = ["config.json", "pytorch_model.bin", "tf_model.h5", "merges.txt", "vocab.json", "README.md"]
    assert allow_patterns(repo) == ["config.json", "merges.txt", "pytorch_model.bin", "vocab.json"]


def test_allow_patterns_gguf_repo_takes_one_file():
    repo = ["README.md", "qwen2.5-1.5b-instruct-q2_k.gguf", "qwen2.5-1.5b-instruct-q4_k_m.gguf",
            "qwen2.5-1.5b-instruct-q8_0.gguf", "qwen2.5-1.5b-instruct-fp16.gguf"]
    assert allow_patterns(repo) == ["qwen2.5-1.5b-instruct-q4_k_m.gguf"]
    assert allow_patterns(repo, gguf_file="qwen2.5-1.5b-instruct-q8_0.gguf") == ["qwen2.5-1.5b-instruct-q8_0.gguf"]


def test_allow_patterns_onnx_only_repo():
    repo = ["onnx/model.onnx", "onnx/model_quantized.onnx", "onnx/tokenizer.json", "config.json", "README.md"]
    assert allow_patterns(repo) == ["config.json", "onnx/model.onnx", "onnx/tokenizer.json"]


def test_hub_download_passes_revision_and_patterns(monkeypatch, tmp_path):
    """No network: the hub client is replaced; the download asks for the revision and only the files needed."""
    import huggingface_hub

    resolve_mod = importlib.import_module("cqtools.models.resolve")  # the package exports a function of that name

    monkeypatch.setattr(resolve_mod, "RESOLVED", dict(resolve_mod.RESOLVED))  # no trace in later run records
    calls = []

    def snapshot_download(name, revision=None, local_files_only=False, allow_patterns=None):
        calls.append((name, revision, local_files_only, allow_patterns))
        if local_files_only:
            raise OSError("not cached")
        (tmp_path / "config.json").write_text("{}")
        return str(tmp_path)

    class Api:
        def model_info(self, name, revision=None):
            from types import SimpleNamespace

            return SimpleNamespace(siblings=[SimpleNamespace(rfilename=f) for f in ST_REPO])

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    monkeypatch.setattr(resolve_mod, "_hub_resolves", lambda: True)  # the faked hub's host "resolves"
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("CQ_OFFLINE", raising=False)
    model = resolve_mod.resolve("some-org/some-model", announce=False, config=RunConfig(revision="v1.0"))
    assert model.source == "hub" and model.revision == "v1.0" and "@v1.0" in model.describe()
    assert calls[0] == ("some-org/some-model", "v1.0", True, None)
    assert calls[1] == ("some-org/some-model", "v1.0", False, allow_patterns(ST_REPO))


def test_unknown_revision_is_one_line(runner, monkeypatch):
    monkeypatch.setenv("CQ_OFFLINE", "1")
    result = runner.invoke(cli, ["models", "--revision", "no-such-rev", "--model", "no-such-org/no-such-model"])
    assert result.exit_code == 1
    assert "at revision 'no-such-rev'" in result.stderr and result.stderr.count("\n") == 1


def test_load_options_reach_the_run_record_only_when_set(runner, tmp_path, tiny_causal):
    """--revision/--trust-remote-code/--quantize set the process-wide options; a set one is in the run record."""
    import orjson

    out = tmp_path / "o.jsonl"
    record = '{"id": "q1", "question": "Who wrote it?"}\n'
    result = runner.invoke(cli, ["oracle", "--resume", str(out), "--trust-remote-code"], input=record)
    assert result.exit_code == 0, result.stderr
    params = orjson.loads((tmp_path / "o.jsonl.cq.json").read_bytes())["params"]
    assert params.get("trust_remote_code") is True and "revision" not in params and "quantize" not in params
    result = runner.invoke(cli, ["oracle", "--resume", str(tmp_path / "p.jsonl")], input=record)
    assert result.exit_code == 0, result.stderr
    assert "trust_remote_code" not in orjson.loads((tmp_path / "p.jsonl.cq.json").read_bytes())["params"]
    from cqtools import config

    assert not hasattr(config, "current")  # the command's configuration was a value of that command alone


@pytest.mark.parametrize("command", ["rerank", "detect", "gen-cq", "answer", "disambiguate", "oracle", "index",
                                     "retrieve", "chat"])
def test_every_model_stage_has_the_load_options(runner, command):
    result = runner.invoke(cli, [command, "--help"])
    assert all(opt in result.output for opt in ("--revision", "--trust-remote-code", "--quantize", "--device",
                                                "--dtype"))


# ---------------------------------------------------------------------------------------------
# cq models


def test_cq_models_shows_backend_device_dtype_and_source(runner):
    result = runner.invoke(cli, ["models", "--json", "--device", "cpu"])
    assert result.exit_code == 0, result.stderr
    rows = {r["role"]: r for r in parse_jsonl(result.stdout)}
    assert rows["encoder"]["backend"] == "sentence-transformers" and rows["encoder"]["device"] == "cpu"
    assert rows["reranker"]["backend"] == "onnxruntime" and rows["reranker"]["dtype"] == "int8"
    assert rows["reader"]["backend"].startswith("transformers") and rows["reader"]["dtype"] == "float32"
    assert rows["reader"]["source"].startswith(("offline:", "hf-cache", "hub", "local", "shipped with cq"))
    assert rows["classifier"]["source"] == "shipped with cq" and rows["classifier"]["dtype"] == "float32"
    assert rows["classifier"]["format"] == "int8 rows (float32 compute)"
    table = runner.invoke(cli, ["models", "--table", "--device", "cpu", "--dtype", "bfloat16"]).stdout
    llm = next(line for line in table.splitlines() if line.startswith("generator"))  # a language model's row
    assert "transformers" in llm and " cpu " in llm and "bfloat16" in llm


def test_cq_models_local_model_with_load(runner, tiny_causal):
    result = runner.invoke(cli, ["models", "--json", "--device", "cpu", "--model", tiny_causal, "--load"])
    assert result.exit_code == 0, result.stderr
    (row,) = parse_jsonl(result.stdout)
    assert row["source"] == "local" and row["backend"] == "transformers"
    assert row["device"] == "cpu" and row["dtype"] == "float32" and row["usable"]


def test_cq_models_openai_model_sends_nothing(runner, monkeypatch):
    """An API model: backend openai, its server (no credentials shown), no device or dtype, no request."""
    from cqtools.models import openai_backend

    monkeypatch.setenv("OPENAI_BASE_URL", "http://user:secret@node1:8000/v1?key=x")
    monkeypatch.setattr(openai_backend.OpenAIGenerator, "request",
                        lambda *a, **k: pytest.fail("cq models sent a request without --load"))
    result = runner.invoke(cli, ["models", "--json", "--model", "openai:my-model"])
    assert result.exit_code == 0, result.stderr
    (row,) = parse_jsonl(result.stdout)
    assert row["backend"] == "openai" and row["api_base"] == "http://node1:8000/v1" and row["api_model"] == "my-model"
    assert row["device"] is None and row["dtype"] is None and "secret" not in result.stdout
    result = runner.invoke(cli, ["models", "--api-base", "http://node2:9000/v1", "--model", "openai:served-model"])
    assert result.exit_code == 0, result.stderr
    assert "openai" in result.stdout and "server http://node2:9000/v1" in result.stdout


def test_cq_models_says_an_openai_model_without_a_key_is_not_usable(runner, monkeypatch):
    """Issue 48: `cq models --model openai:...` said usable with no API key, which every stage refuses. It now says
    what is missing; with a key, or on a server of one's own (no key needed), it is usable."""
    for var in ("CQ_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    result = runner.invoke(cli, ["models", "--json", "--model", "openai:gpt-4o-mini"])
    (row,) = parse_jsonl(result.stdout)
    assert row["usable"] is False and "needs a key: set CQ_API_KEY or OPENAI_API_KEY" in row["problem"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (row,) = parse_jsonl(runner.invoke(cli, ["models", "--json", "--model", "openai:gpt-4o-mini"]).stdout)
    assert row["usable"] is True and row["problem"] is None and "sk-test" not in str(row)
    monkeypatch.delenv("OPENAI_API_KEY")
    (row,) = parse_jsonl(runner.invoke(cli, ["models", "--json", "--api-base", "http://node2:9000/v1", "--model",
                                             "openai:served"]).stdout)
    assert row["usable"] is True


@pytest.mark.slow
def test_thread_count_does_not_change_smollm2_outputs():
    """`make -j2 compare` runs cells side by side with OMP_NUM_THREADS=1: the offline LLM's prefill logits are
    bitwise those of two threads, and so are greedy texts. A decode step over a cache of 600 keys is not bitwise
    (torch 2.13's SDPA splits one query's attention over the threads: 2e-5 measured here; eager attention is
    bitwise but 15% slower a step), so it is held within 1e-4; docs/benchmarks/determinism.md says so."""
    from cqtools.models.load import load_generator

    gen = load_generator("HuggingFaceTB/SmolLM2-135M-Instruct", "cpu")
    ids = torch.arange(100, 700)[None] * 7 % 20000
    threads, outputs = torch.get_num_threads(), {}
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            with torch.inference_mode():
                out = gen.model(ids, use_cache=True)
                step = gen.model(ids[:, -1:], past_key_values=out.past_key_values, use_cache=True)
            text = gen.generate([" ".join(PROMPTS)], max_new_tokens=12, chat=False)
            outputs[n] = (out.logits, step.logits, text)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(outputs[1][0], outputs[2][0])
    assert (outputs[1][1] - outputs[2][1]).abs().max().item() < 1e-4
    assert outputs[1][2] == outputs[2][2]


def test_generation_stops_only_where_the_cut_is_settled():
    """With overlapping stop strings the row runs on until no stop string starting earlier can still
    complete: stopping at "ab xy" (for "y") would cut "ab x", while the full text is cut at "xyz"."""
    from cqtools.models.cutting import cut_at_stop as _cut
    from cqtools.models.generator import _stop_criteria

    class CharTokenizer:
        def batch_decode(self, rows, skip_special_tokens=True):
            return ["".join(map(chr, row.tolist())) for row in rows]

    criterion = _stop_criteria(CharTokenizer(), ["xyz", "y"], start=2)
    text = "??ab xyz c"
    stops = [bool(criterion(torch.tensor([[ord(c) for c in text[:n]]]), None)[0]) for n in range(3, len(text) + 1)]
    first = stops.index(True) + 3
    assert text[:first] == "??ab xyz" and all(stops[first - 3:])
    assert _cut(text[2:first], ["xyz", "y"]) == _cut(text[2:], ["xyz", "y"]) == "ab"
    assert _stop_criteria(CharTokenizer(), [], 0) is None


# ---------------------------------------------------------------------------------------------
# the generation cache (CQ_GEN_CACHE): exact, keyed by everything that decides the text


def test_generation_cache_gives_the_same_text_and_misses_what_it_must(tiny_causal, tmp_path, monkeypatch):
    import os
    import shutil

    from cqtools.models.generator import LocalGenerator

    model = str(tmp_path / "model")
    shutil.copytree(tiny_causal, model)
    resolved = ResolvedModel(model, model, "local", "hf")
    prompts = PROMPTS + [PROMPTS[0]]
    monkeypatch.delenv("CQ_PADDED_BATCHES", raising=False)
    monkeypatch.delenv("CQ_GEN_CACHE", raising=False)
    plain = LocalGenerator(resolved, RunConfig.from_env(), "cpu", "float32")
    assert plain.cache is None
    expected = plain.generate(prompts, max_new_tokens=6, chat=False, stop=["[SEP]", "."])

    monkeypatch.setenv("CQ_GEN_CACHE", str(tmp_path / "gen.sqlite"))

    def counted(gen):
        calls = []
        original = gen.model.generate
        gen.model.generate = lambda *a, **k: calls.append(1) or original(*a, **k)
        return calls

    first = LocalGenerator(resolved, RunConfig.from_env(), "cpu", "float32")
    calls = counted(first)
    assert first.generate(prompts, max_new_tokens=6, chat=False, stop=["[SEP]", "."]) == expected
    assert len(calls) == len(PROMPTS)  # the repeated prompt ran once
    second = LocalGenerator(resolved, RunConfig.from_env(), "cpu", "float32")  # another process, in effect
    calls = counted(second)
    assert second.generate(prompts, max_new_tokens=6, chat=False, stop=[".", "[SEP]"]) == expected
    assert calls == [], "every prompt read from the cache"
    assert second.generate(prompts[:1], max_new_tokens=7, chat=False, stop=["[SEP]", "."]) == \
        plain.generate(prompts[:1], max_new_tokens=7, chat=False, stop=["[SEP]", "."])
    assert len(calls) == 1, "another length is another generation"
    second.generate(prompts[:1], max_new_tokens=6, chat=False, stop=None)
    assert len(calls) == 2, "other stop strings are another generation"

    weights = next(f for f in os.listdir(model) if f.endswith(".safetensors"))
    stat = os.stat(os.path.join(model, weights))
    os.utime(os.path.join(model, weights), ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    retrained = LocalGenerator(resolved, RunConfig.from_env(), "cpu", "float32")
    calls = counted(retrained)
    retrained.generate(prompts[:2], max_new_tokens=6, chat=False, stop=["[SEP]", "."])
    assert len(calls) == 2, "a model whose weights changed misses"

    monkeypatch.setenv("CQ_PADDED_BATCHES", "1")
    assert LocalGenerator(resolved, RunConfig.from_env(), "cpu", "float32").cache is None, "padded batches are never cached"


def test_generation_cache_errors_are_one_line_and_counts_reach_make(tiny_causal, tmp_path, monkeypatch):
    import json

    from cqtools.models import gencache
    from cqtools.models.generator import LocalGenerator

    resolved = ResolvedModel(tiny_causal, tiny_causal, "local", "hf")
    monkeypatch.delenv("CQ_PADDED_BATCHES", raising=False)
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"not a database, just bytes" * 100)
    for bad in (tmp_path, corrupt):  # a directory; a file that is no SQLite database
        monkeypatch.setenv("CQ_GEN_CACHE", str(bad))
        with pytest.raises(ResourceError, match="CQ_GEN_CACHE=.*cannot use it as a generation cache"):
            LocalGenerator(resolved, RunConfig.from_env(), "cpu", "float32")

    monkeypatch.setattr(gencache, "_STATS", {})
    monkeypatch.setattr(gencache, "_REPORTS", set())
    monkeypatch.setenv("CQ_GEN_CACHE", str(tmp_path / "ok.sqlite"))
    report = tmp_path / "stage.gencache"
    monkeypatch.setenv("CQ_GEN_CACHE_REPORT", str(report))
    gen = LocalGenerator(resolved, RunConfig.from_env(), "cpu", "float32")  # the report file of its configuration
    gen.generate(["hi", "hi", "who is"], max_new_tokens=3, chat=False)
    gen.generate(["hi"], max_new_tokens=3, chat=False)
    gencache._report()
    gencache._report()  # a resumed stage's second attempt adds to the first's counts
    assert json.loads(report.read_text()) == {"hits": 2, "added": 4}


def test_a_gguf_file_is_converted_once_for_every_clone_that_holds_it(tmp_path, monkeypatch):
    """The safetensors copy is named by the file's content: two virtualenvs (two paths, two mtimes)
    holding the same GGUF share one copy; another file gets its own."""
    import os

    from cqtools.models.gguf import converted_path

    cache = str(tmp_path / "cache")
    data = os.urandom(3 << 20)
    paths = []
    for n, venv in enumerate(("venv-a", "venv-b")):
        path = tmp_path / venv / "model.gguf"
        path.parent.mkdir()
        path.write_bytes(data)
        os.utime(path, (1_000_000 + n, 1_000_000 + n))
        paths.append(str(path))
    assert converted_path(paths[0], cache) == converted_path(paths[1], cache)
    assert converted_path(paths[0], cache).startswith(str(tmp_path / "cache" / "gguf" / "model-"))
    other = tmp_path / "venv-c" / "model.gguf"
    other.parent.mkdir()
    other.write_bytes(data[:-1] + b"x")
    assert converted_path(str(other), cache) != converted_path(paths[0], cache)


def test_the_gguf_conversion_draws_no_bar_under_quiet():
    import transformers.modeling_gguf_pytorch_utils as gguf_utils

    from cqtools.models.gguf import quiet_bar

    original = gguf_utils.tqdm
    with quiet_bar(True):
        assert gguf_utils.tqdm(range(2)).disable  # what the loader draws while converting under -q
    assert gguf_utils.tqdm is original
    with quiet_bar(False):
        assert gguf_utils.tqdm is original


def test_a_local_paths_weight_format_is_found_by_the_registered_formats(tmp_path):
    """resolve asks the registered weight formats in turn (cqtools/models/formats.py), in the order the if-chain
    had: sentence-transformers, onnx, gguf, else hf."""
    resolve_mod = importlib.import_module("cqtools.models.resolve")
    cases = {"st": ["modules.json", "m.gguf"], "onnx": ["model.onnx", "tokenizer.json"], "dir-gguf": ["m.gguf"],
             "plain": ["config.json"]}
    for name, files in cases.items():
        (tmp_path / name).mkdir()
        for f in files:
            (tmp_path / name / f).write_text("{}")
    (tmp_path / "one.gguf").write_text("")
    found = {name: resolve_mod._local_fmt(str(tmp_path / name)) for name in [*cases, "one.gguf"]}
    assert found == {"st": "sentence-transformers", "onnx": "onnx", "dir-gguf": "gguf", "plain": "hf",
                     "one.gguf": "gguf"}
