"""--packing (textbox/data/packing.py): a packed training batch trains exactly what the padded batch of the same
examples trains: position ids restart per example, attention does not cross examples, and the loss (same target
tokens, same normaliser) equals the padded loss; refused where it cannot hold."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from textbox.data.collate import CausalLMCollator
from textbox.data.packing import PackedCausalLMCollator, pack
from textbox.model.loss import forward_token_losses, trained_examples
from textbox.utils.labels import IGNORE_INDEX
from tests.helpers import one_problem, problems

EOS, VOCAB = 2, 40


def examples(count: int = 9, seed: int = 0) -> list[dict[str, list[int]]]:
    """Examples of varied source and target lengths (targets end with eos, as tokenisation writes them)."""
    rng = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 12, (count, 2), generator=rng).tolist()
    return [{"input_ids": torch.randint(3, VOCAB, (source,), generator=rng).tolist(),
             "labels": [*torch.randint(3, VOCAB, (target,), generator=rng).tolist(), EOS]}
            for source, target in lengths]


def collators() -> tuple[CausalLMCollator, PackedCausalLMCollator]:
    padded = CausalLMCollator(SimpleNamespace(eos_token_id=EOS, pad_token_id=None))  # type: ignore[arg-type]
    return padded, PackedCausalLMCollator(padded)


def tiny(family: str, attention: str) -> torch.nn.Module:
    torch.manual_seed(0)
    if family == "llama":
        config = LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                             num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                             eos_token_id=EOS)
        return LlamaForCausalLM._from_config(config, attn_implementation=attention).eval()
    config = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=1, n_head=2, eos_token_id=EOS,
                        bos_token_id=EOS)
    return GPT2LMHeadModel._from_config(config, attn_implementation=attention).eval()


def test_packed_rows_hold_every_example_with_positions_restarting():
    padded, packed = collators()
    batch = packed(examples())
    joined = [padded.joined(example) for example in examples()]
    assert batch["input_ids"].shape[0] < len(joined)  # fewer rows than examples
    assert batch["input_ids"].shape[1] <= max(len(ids) for ids, _ in joined)  # never wider than padded
    assert "attention_mask" not in batch and trained_examples(batch) == len(joined)
    found = []
    for row_ids, row_positions in zip(batch["input_ids"].tolist(), batch["position_ids"].tolist()):
        starts = [column for column, position in enumerate(row_positions) if position == 0] + [len(row_positions)]
        found += [row_ids[start:end] for start, end in zip(starts, starts[1:])]
    for ids, _ in joined:  # each example lies whole in a row, its positions 0, 1, 2, ...
        assert ids in found
        found.remove(ids)
    assert all(set(rest) == {EOS} for rest in found)  # what is left is trailing padding (pad = eos here)
    assert int((batch["labels"] != IGNORE_INDEX).sum()) == sum(len(example["labels"]) for example in examples())


def test_first_fit_is_deterministic_and_fills_rows():
    assert pack([0, 1, 2, 3], [6, 5, 4, 1], 10) == [[0, 2], [1, 3]]
    assert pack([0, 1, 2, 3], [6, 5, 4, 1], 10) == pack([0, 1, 2, 3], [6, 5, 4, 1], 10)


@pytest.mark.parametrize("family,attention", [("llama", "eager"), ("llama", "sdpa"), ("gpt2", "sdpa")])
def test_packed_loss_and_logits_equal_the_padded_ones(family, attention):
    model = tiny(family, attention)
    padded, packed = collators()
    data = examples()
    with torch.no_grad():
        padded_sums, padded_counts = forward_token_losses(model, model, padded(data))
        packed_batch = packed(data)
        packed_sums, packed_counts = forward_token_losses(model, model, packed_batch)
        assert int(packed_counts.sum()) == int(padded_counts.sum())  # the same normaliser
        padded_loss = padded_sums.sum() / padded_counts.sum()
        assert torch.allclose(packed_sums.sum() / packed_counts.sum(), padded_loss, atol=1e-5)
        # A token's logits in its packed row are its logits alone: attention does not cross examples.
        ids = packed_batch["input_ids"][:1]
        logits = model(input_ids=ids, position_ids=packed_batch["position_ids"][:1], use_cache=False).logits[0]
        starts = (packed_batch["position_ids"][0] == 0).nonzero().flatten().tolist()
        for start, end in zip(starts, starts[1:]):
            alone = model(input_ids=ids[:, start:end], use_cache=False).logits[0]
            assert torch.allclose(logits[start:end], alone, atol=1e-5)


def test_a_chat_examples_first_label_is_not_scored_by_the_example_before():
    padded, packed = collators()
    first, second = examples(2)
    second = {**second, "prompt_labels": [7] * (len(second["input_ids"]) + 1)}  # labelled from its first token
    batch = packed([first, second])
    assert batch["input_ids"].shape[0] == 1 or batch["labels"][1, 0] == IGNORE_INDEX
    starts = (batch["position_ids"] == 0).nonzero().tolist()
    assert all(batch["labels"][row, column] == IGNORE_INDEX for row, column in starts)


def test_packing_is_refused_for_encoder_decoders_and_prompt_methods():
    problem = one_problem("--model=transformer", "--packing=True")
    assert problem.startswith("--packing") and "encoder-decoder" in problem and "drop --packing" in problem
    found = problems("--model=gpt2", "--packing=True", "--efficient_methods=['prompt-tuning']")
    assert any(problem.startswith("--packing") and "prompt-tuning" in problem for problem in found)
    assert not any("--packing" in problem for problem in problems("--model=gpt2", "--packing=True"))


def test_packing_is_refused_for_a_model_type_whose_attention_would_cross(tmp_path):
    from transformers import OPTConfig

    from textbox.config import TextBoxUserError
    from textbox.model import causal_lm
    from tests.helpers import user_config

    OPTConfig(vocab_size=VOCAB, hidden_size=32, ffn_dim=64, num_hidden_layers=1, num_attention_heads=2,
              word_embed_proj_dim=32).save_pretrained(tmp_path)
    config = user_config(model="causal_lm", model_path=str(tmp_path), packing=True)
    with pytest.raises(TextBoxUserError, match="'opt' model, whose attention would cross"):
        causal_lm.build(config, None)


def test_packing_is_refused_for_attention_that_ignores_the_packed_mask():
    from textbox.config import TextBoxUserError
    from textbox.model.attention import check_packing

    model = tiny("llama", "sdpa")
    check_packing(model)  # followed: no error
    model.config._attn_implementation = "flash_attention_2"
    with pytest.raises(TextBoxUserError, match="--packing: the model runs 'flash_attention_2' attention"):
        check_packing(model)
