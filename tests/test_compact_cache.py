"""Issue 37, item 2 (the smoke run's model loading): a compact model (the shipped classifier and reader) is
multiplied back into float32 once; its float32 copy in CQ_CACHE serves every later load, with the same tensors
and the same outputs. An unwritable cache only costs the next load its time."""
import os

import pytest
import torch

from cqtools.models import compact


@pytest.fixture
def compact_dir(tiny_classifier, tmp_path):
    out = tmp_path / "compact"
    out.mkdir()
    compact.compact(tiny_classifier, str(out))
    return str(out)


def test_the_second_load_reads_the_float32_copy_and_gives_the_same_model(compact_dir, tmp_path, monkeypatch):
    from transformers import AutoModelForSequenceClassification as Auto

    cache = str(tmp_path / "cache")
    copy = compact.float_copy_path(compact_dir, cache)
    assert os.path.dirname(copy) == str(tmp_path / "cache" / "compact") and not os.path.exists(copy)
    first = compact.load_model(compact_dir, Auto, cache).eval()
    assert sorted(os.listdir(copy)) == ["config.json", "model.safetensors"]
    built = []
    monkeypatch.setattr(Auto, "from_config", lambda *a, **k: built.append(a) or pytest.fail("rebuilt, not read"))
    second = compact.load_model(compact_dir, Auto, cache).eval()
    assert not built
    one, two = first.state_dict(), second.state_dict()
    assert one.keys() == two.keys() and all(torch.equal(one[k], two[k]) for k in one)
    assert next(second.parameters()).dtype == torch.float32
    ids = torch.tensor([[2, 5, 7, 3]])
    with torch.no_grad():
        assert torch.equal(first(input_ids=ids).logits, second(input_ids=ids).logits)
    # the copy is named by the weights' recorded sha256 and the config's bytes, not by times or paths
    os.utime(os.path.join(compact_dir, "config.json"))
    assert compact.float_copy_path(compact_dir, cache) == copy  # named by content, not by time


def test_an_unwritable_cache_still_loads(compact_dir, tmp_path, monkeypatch):
    from transformers import AutoModelForSequenceClassification as Auto

    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    model = compact.load_model(compact_dir, Auto, str(blocked))
    assert model is not None and blocked.is_file()
