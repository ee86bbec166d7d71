"""`cq disambiguate --method toc`: Tree of Clarifications as its released code runs it
(gankim/tree-of-clarifications @75a3ddd; docs/audit/toc-clam.md §1, docs/methods-toc.md), and the
sampling it needs in every generator."""
from __future__ import annotations

import pytest

# --- sampling in the generators -------------------------------------------------------------------


def test_local_sampling_is_seeded_per_prompt_and_batch_free(tiny_causal, monkeypatch):
    from cqtools.models import load_generator

    gen = load_generator(tiny_causal, "cpu")
    prompts = ["a question about ships", "another prompt", "a question about ships"]
    greedy = gen.generate(prompts, max_new_tokens=8)
    one = gen.generate(prompts, max_new_tokens=8, temperature=0.7, seed=3)
    again = [gen.generate([p], max_new_tokens=8, temperature=0.7, seed=3)[0] for p in reversed(prompts)][::-1]
    assert one == again and one[0] == one[2]  # same prompt, same seed: same text, in any batch
    other = gen.generate(prompts, max_new_tokens=8, temperature=0.7, seed=4)
    assert other != one  # another seed samples other text
    assert gen.generate(prompts, max_new_tokens=8) == greedy  # temperature 0 stays greedy
    monkeypatch.setattr(gen, "padded", True)  # padded batching never applies to sampled prompts
    assert gen.generate(prompts, max_new_tokens=8, temperature=0.7, seed=3, batch_size=3) == one


def test_per_prompt_seeds_and_the_fake_records_decoding():
    from cqtools.models.runtime import prompt_seed, prompt_seeds

    from .fakes import FakeGenerator

    assert prompt_seed(1, "x") == prompt_seed(1, "x") != prompt_seed(2, "x")
    assert prompt_seeds([1, 2], ["x", "x"]) == [prompt_seed(1, "x"), prompt_seed(2, "x")]
    with pytest.raises(ValueError):
        prompt_seeds([1], ["x", "y"])
    fake = FakeGenerator("ok")
    fake.generate(["p"], max_new_tokens=5, temperature=0.7, top_p=1.0, seed=[9])
    assert fake.log == [{"prompt": "p", "max_new_tokens": 5, "stop": None, "temperature": 0.7, "top_p": 1.0,
                         "seed": 9}]
