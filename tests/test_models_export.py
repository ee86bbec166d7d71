"""Issue 37, item 3: the models cq ships load the Hugging Face way (`cq models export NAME DIR`, then
transformers' from_pretrained without cq), and their cards start with the Hub's metadata header."""
import os

import orjson
import pytest

from cqtools.cli import cli
from cqtools.models.roles import SHIPPED_DIR

from .conftest import jsonl, parse_jsonl


@pytest.mark.parametrize("name,auto,tag", [("detect", "AutoModelForSequenceClassification", "text-classification"),
                                           ("reader", "AutoModelForQuestionAnswering", "question-answering")])
def test_a_shipped_model_exported_loads_with_from_pretrained_and_has_a_hub_card(runner, tmp_path, name, auto, tag):
    import transformers

    out = tmp_path / name
    result = runner.invoke(cli, ["models", "export", name, str(out)])
    assert result.exit_code == 0, result.stderr
    assert "model.safetensors" in orjson.loads(result.stdout)["files"]
    model = getattr(transformers, auto).from_pretrained(str(out))
    transformers.AutoTokenizer.from_pretrained(str(out))
    assert model.config.architectures[0].endswith(auto.replace("AutoModel", ""))
    for card in (out / "README.md", os.path.join(SHIPPED_DIR, name, "README.md")):
        text = open(card).read()
        header = text.split("---\n")[1]
        assert text.startswith("---\n") and "library_name: transformers" in header and f"pipeline_tag: {tag}" in header


def test_the_exported_classifier_computes_what_cq_detect_does(runner, tmp_path):
    import torch
    import transformers

    out = tmp_path / "detect"
    assert runner.invoke(cli, ["models", "export", "detect", str(out)]).exit_code == 0
    model = transformers.AutoModelForSequenceClassification.from_pretrained(str(out)).eval()
    tok = transformers.AutoTokenizer.from_pretrained(str(out))
    question = "What is the capital of Australia?"
    with torch.inference_mode():
        p = torch.softmax(model(**tok([question], return_tensors="pt", truncation=True, max_length=48)).logits, -1)
    detected = parse_jsonl(runner.invoke(cli, ["detect", "-q"], input=jsonl([{"id": "a", "question": question}])).stdout)
    assert abs(float(p[0, 1]) - detected[0]["ambiguity"]["score"]) < 1e-5


def test_export_refuses_what_is_not_a_compact_model(runner, tmp_path):
    result = runner.invoke(cli, ["models", "export", str(tmp_path), str(tmp_path / "out")])
    assert result.exit_code == 1 and "neither a model cq ships" in result.stderr.strip().splitlines()[-1]
