"""CTranslate2 decoding (textbox/decoding/ctranslate2_engine.py) against transformers' generate on a tiny BART
trained for a few seconds to reverse words: same outputs, each mapped setting changing them alike, fallbacks
and refusals with their messages, and a conversion cache that converts once and never touches the checkpoint."""
from __future__ import annotations

import hashlib
import json
import logging

import pytest
import torch

from textbox.config import TextBoxUserError
from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.collate import Seq2SeqCollator
from textbox.decoding.ctranslate2_cache import converted_model
from textbox.decoding.detokenize import one_line
from textbox.decoding.engine import DecodingOptions, choose_engine
from textbox.decoding.generate import generate_sequences, generate_texts
from tests.helpers import fresh_python_prints

EXAMPLES = 120


@pytest.fixture
def options(tmp_path):
    """CTranslate2 options for the test (cache in tmp_path)."""
    return DecodingOptions("ctranslate2", "float32", str(tmp_path / "cache"), 0)


def _evaluator(tokenizer):
    from accelerate import Accelerator

    from textbox.evaluator.evaluator import Evaluator

    config = Config({**DEFAULTS, "eval_batch_size": 32})
    return Evaluator(config, Accelerator(cpu=True), tokenizer, Seq2SeqCollator(tokenizer.pad_token_id))


def _decode(trained, pairs, tmp_path, settings, backend):
    model, tokenizer = trained
    evaluator = _evaluator(tokenizer)
    inputs = tokenizer([source for source, _ in pairs[:EXAMPLES]])["input_ids"]
    loader = evaluator.loader([{"input_ids": ids, "labels": []} for ids in inputs])
    return generate_texts(evaluator.accelerator, model, tokenizer, loader, dict(settings), "test",
                          DecodingOptions(backend, "float32", str(tmp_path / "cache"), 0))


def _decode_all(trained, pairs, tmp_path, settings, backend):
    """Every returned sequence, example after example (num_return_sequences per example)."""
    model, tokenizer = trained
    evaluator = _evaluator(tokenizer)
    inputs = tokenizer([source for source, _ in pairs[:EXAMPLES]])["input_ids"]
    loader = evaluator.loader([{"input_ids": ids, "labels": []} for ids in inputs])
    sequences = generate_sequences(evaluator.accelerator, model, tokenizer, loader, dict(settings), "test",
                                   DecodingOptions(backend, "float32", str(tmp_path / "cache"), 0))
    return [text for texts in sequences for text in texts]


def _reference(trained, pairs, tmp_path, settings):
    """transformers' generate through the same loader (tests/unit/decoding/test_eval_loop.py shows that path
    gives model.generate's outputs token for token)."""
    return _decode(trained, pairs, tmp_path, settings, "transformers")


@pytest.mark.parametrize("settings", [
    {"num_beams": 1},
    {"num_beams": 4, "early_stopping": True},
    {"num_beams": 4, "early_stopping": "never"},
    {"num_beams": 4, "early_stopping": True, "length_penalty": 2.0},
    {"num_beams": 4, "early_stopping": "never", "length_penalty": 0.5},
    {"num_beams": 4, "early_stopping": False, "length_penalty": -0.5},  # its heuristic bound is exact there
    {"num_beams": 4, "length_penalty": 0.0},
], ids=lambda settings: "-".join(f"{key}={value}" for key, value in settings.items()))
def test_outputs_equal_transformers(trained, pairs, tmp_path, options, settings):
    """The same search on both engines: every output identical, including the searches cut at the length bound
    (max_new_tokens=10 cuts many here, under BART's forced end token)."""
    settings = {**settings, "max_new_tokens": 10}
    ours = _decode(trained, pairs, tmp_path, settings, "ctranslate2")
    reference = _reference(trained, pairs, tmp_path, settings)
    assert len(ours) == EXAMPLES and any(ours)
    assert ours == reference


def test_unset_early_stopping_searches_as_early_stopping_true_and_says_so(trained, pairs, tmp_path):
    """transformers' default heuristic (early_stopping=False) has no CTranslate2 equal: a beam search that leaves
    early_stopping unset runs as early_stopping=True does, and the engine's log line (its reason) says so."""
    settings = {"num_beams": 4, "max_new_tokens": 10}
    ours = _decode(trained, pairs, tmp_path, settings, "ctranslate2")
    assert ours == _reference(trained, pairs, tmp_path, {**settings, "early_stopping": True})
    heuristic = _reference(trained, pairs, tmp_path, settings)
    print(f"unset early_stopping: {sum(a != b for a, b in zip(ours, heuristic))}/{EXAMPLES} outputs differ from "
          f"transformers' default heuristic")
    reason = choose_engine(trained[0], settings, "test", DecodingOptions("auto")).reason
    assert "beam search stops once num_beams hypotheses have ended (early_stopping=True)" in reason
    assert "early_stopping" not in choose_engine(trained[0], {**settings, "early_stopping": True}, "test",
                                                 DecodingOptions("auto")).reason


def test_num_return_sequences_gives_that_many_per_example_in_order(trained, pairs, tmp_path, options):
    settings = {"num_beams": 4, "num_return_sequences": 2, "max_new_tokens": 10, "early_stopping": True}
    ours = _decode_all(trained, pairs, tmp_path, settings, "ctranslate2")
    model, tokenizer = trained
    with torch.no_grad():  # model.generate itself: its rows are num_return_sequences per example, in order
        ids = model.generate(**tokenizer([source for source, _ in pairs[:EXAMPLES]], return_tensors="pt",
                                         padding=True), **settings)
    reference = [one_line(text) for text in tokenizer.batch_decode(ids, skip_special_tokens=True)]
    assert len(ours) == len(reference) == 2 * EXAMPLES
    assert ours == reference


def test_sampling_uses_the_seed_and_top_k_1_is_greedy(trained, pairs, tmp_path, options):
    sampled = {"do_sample": True, "top_k": 0, "temperature": 2.0, "max_new_tokens": 10}
    first = _decode(trained, pairs, tmp_path, sampled, "ctranslate2")
    again = _decode(trained, pairs, tmp_path, sampled, "ctranslate2")
    greedy = _decode(trained, pairs, tmp_path, {"max_new_tokens": 10}, "ctranslate2")
    assert first == again and first != greedy
    assert _decode(trained, pairs, tmp_path, {**sampled, "top_k": 1}, "ctranslate2") == greedy


@pytest.fixture
def two_threads():
    """torch (and so the engine) on 2 threads for one test; the suite runs on 1 (tests/conftest.py)."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_on_two_threads_batches_decode_side_by_side_and_sampling_keeps_its_seed(trained, pairs, tmp_path,
                                                                                 monkeypatch, two_threads):
    """On a CPU with 2 threads, beam search runs 2 one-thread workers (whole batches side by side) and gives
    generate's outputs; sampling runs one worker, so that the same seed samples the same texts.
    torch keeps its 2 threads (this process imported torch first: a decode left it on one)."""
    from textbox.decoding import ctranslate2_engine

    loaded = []
    real_load = ctranslate2_engine.load_engine
    monkeypatch.setattr(ctranslate2_engine, "load_engine",
                        lambda *args, **kwargs: loaded.append(real_load(*args, **kwargs)) or loaded[-1])
    beam = {"num_beams": 4, "early_stopping": True, "max_new_tokens": 10}
    assert _decode(trained, pairs, tmp_path, beam, "ctranslate2") == _reference(trained, pairs, tmp_path, beam)
    assert loaded[-1].num_translators == 2
    sampled = {"do_sample": True, "top_k": 0, "temperature": 2.0, "max_new_tokens": 10}
    first = _decode(trained, pairs, tmp_path, sampled, "ctranslate2")
    assert loaded[-1].num_translators == 1
    assert _decode(trained, pairs, tmp_path, sampled, "ctranslate2") == first
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize("first, sampling_layout", [("ctranslate2", (1, 2)), ("torch", (1, 1))])
def test_sampling_runs_one_thread_where_ctranslate2_shares_torchs_openmp_runtime(first, sampling_layout):
    """(workers, threads per worker) on 2 threads: searches always one one-thread worker per thread; sampling one
    worker on both threads, or on one where CTranslate2 was imported after torch (its worker then ran at a quarter
    of one thread's speed on 2: docs/speedups.md, "Threads")."""
    second = "torch" if first == "ctranslate2" else "ctranslate2"
    script = (f"import {first}, {second}; from textbox.decoding.ctranslate2_engine import thread_layout; "
              f"print(thread_layout(2, sampling=True), thread_layout(2, sampling=False))")
    assert fresh_python_prints(script) == f"{sampling_layout} (2, 1)"


def test_the_pipeline_loads_ctranslate2_before_torch():
    """A run's process (config checks, then textbox.pipeline) loads CTranslate2 before torch: loaded after torch,
    CTranslate2's OpenMP calls bind to torch's runtime and its threads ran several times slower
    (textbox/pipeline/__init__.py)."""
    script = ("import sys; from textbox.checks import load_checked_config; load_checked_config([]); "
              "assert 'torch' not in sys.modules; import textbox.pipeline; names = list(sys.modules); "
              "print(names.index('ctranslate2') < names.index('torch'))")
    assert fresh_python_prints(script) == "True"


def test_sampling_reads_top_k_as_transformers_does(trained, pairs, tmp_path):
    """transformers samples from the 50 best tokens when top_k is unset (tests/unit/decoding/
    test_transformers_assumptions.py), CTranslate2 from all of them unless told: unset must mean 50 on both. A
    top_k past the vocabulary is the whole vocabulary (CTranslate2 raised a ValueError), and top_k=1 gives
    num_return_sequences copies of the greedy output (CTranslate2 refused more than one)."""
    sampled = {"do_sample": True, "temperature": 5.0, "max_new_tokens": 10}  # hot: the long tail gets drawn
    unset = _decode(trained, pairs, tmp_path, sampled, "ctranslate2")
    assert unset == _decode(trained, pairs, tmp_path, {**sampled, "top_k": 50}, "ctranslate2")
    everything = _decode(trained, pairs, tmp_path, {**sampled, "top_k": 0}, "ctranslate2")
    assert unset != everything
    assert _decode(trained, pairs, tmp_path, {**sampled, "top_k": 5000}, "ctranslate2") == everything
    copies = {"do_sample": True, "top_k": 1, "num_return_sequences": 2, "max_new_tokens": 10}
    greedy = _reference(trained, pairs, tmp_path, {"max_new_tokens": 10})
    assert _decode_all(trained, pairs, tmp_path, copies, "ctranslate2") == [text for text in greedy for _ in range(2)]


def test_auto_falls_back_with_a_log_line_and_explicit_ctranslate2_refuses(trained, caplog):
    model, _ = trained
    auto = DecodingOptions("auto")
    with caplog.at_level(logging.INFO):
        choice = choose_engine(model, {"repetition_penalty": 1.3}, "test", auto)
    assert choice.name == "transformers" and "repetition_penalty=1.3" in choice.reason
    assert "decoding with transformers" in caplog.text and "repetition_penalty" in caplog.text
    with pytest.raises(TextBoxUserError, match="--decoding_backend=ctranslate2: .*no_repeat_ngram_size=2 with "
                                                "num_beams=4"):
        choose_engine(model, {"num_beams": 4, "no_repeat_ngram_size": 2}, "test", DecodingOptions("ctranslate2"))
    with pytest.raises(TextBoxUserError, match="output_scores|logits_processor"):
        choose_engine(model, {"logits_processor": []}, "test", DecodingOptions("ctranslate2"))
    assert choose_engine(model, {"num_beams": 4}, "test", auto).name == "ctranslate2"
    rnn = torch.nn.GRU(4, 4)
    assert choose_engine(rnn, {}, "test", auto).name == "transformers"


def test_weights_split_by_the_launcher_decode_with_transformers_under_auto(trained, monkeypatch):
    """FSDP (or DeepSpeed ZeRO-3) leaves no process with the whole model to convert: auto decodes with transformers
    and says why (an explicit ctranslate2 is refused at config time: tests/unit/config/test_launcher.py)."""
    from textbox.config.schema import DEFAULTS

    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    options = DecodingOptions.from_values(DEFAULTS)
    assert options.sharded == "FSDP"
    choice = choose_engine(trained[0], {"num_beams": 4}, "test", options)
    assert choice.name == "transformers"
    assert choice.reason == ("--decoding_backend=auto: the weights are split over the processes (FSDP), and "
                             "CTranslate2 converts a whole model")
    monkeypatch.delenv("ACCELERATE_USE_FSDP")
    assert choose_engine(trained[0], {"num_beams": 4}, "test", DecodingOptions.from_values(DEFAULTS)).name == \
        "ctranslate2"


@pytest.mark.parametrize("settings, why", [
    ({"num_beams": 4, "early_stopping": False}, "early_stopping=False with length_penalty=1.0: transformers' "
                                                "heuristic stop"),
    ({"num_beams": 4, "min_new_tokens": 3}, "a minimum length with num_beams=4: CTranslate2 bans the end token "
                                            "before normalising"),
    ({"num_beams": 4, "length_penalty": 0.0, "early_stopping": True}, "early_stopping=True with length_penalty=0"),
    ({"num_beams": 4, "length_penalty": 0.0, "num_return_sequences": 2}, "num_return_sequences=2 with "
                                                                         "length_penalty=0"),
    ({"num_beams": 4, "early_stopping": True, "forced_bos_token_id": 5}, "forced_bos_token_id=5 with num_beams=4: "
                                                                          "CTranslate2 never lets a beam other than "
                                                                          "the best end right after a forced token"),
])
def test_beam_searches_ctranslate2_cannot_run_alike_fall_back(trained, pairs, tmp_path, settings, why):
    """Each of these decodes differently on CTranslate2 (measured here before it was refused): auto falls back
    to transformers and names why, an explicit ctranslate2 is refused."""
    model, _ = trained
    choice = choose_engine(model, settings, "test", DecodingOptions("auto"))
    assert choice.name == "transformers" and why in choice.reason
    with pytest.raises(TextBoxUserError, match="--decoding_backend=ctranslate2: "):
        choose_engine(model, settings, "test", DecodingOptions("ctranslate2"))


def test_prompt_adapters_fall_back_and_lora_is_merged(trained, pairs, tmp_path, options):
    import copy

    from peft import LoraConfig, PromptTuningConfig, TaskType, get_peft_model

    model, tokenizer = trained
    prompt = get_peft_model(copy.deepcopy(model), PromptTuningConfig(task_type=TaskType.SEQ_2_SEQ_LM,
                                                                      num_virtual_tokens=2))
    choice = choose_engine(prompt, {}, "test", DecodingOptions("auto"))
    assert choice.name == "transformers" and "prompt-tuning adapter" in choice.reason
    lora_config = LoraConfig(task_type=TaskType.SEQ_2_SEQ_LM, r=2, target_modules=["q_proj", "v_proj"],
                             init_lora_weights=False)  # random adapters: they change the outputs
    lora = get_peft_model(copy.deepcopy(model), lora_config)
    lora.eval()
    settings = {"num_beams": 1, "max_new_tokens": 10}
    ours = _decode((lora, tokenizer), pairs, tmp_path, settings, "ctranslate2")
    reference = _reference((lora, tokenizer), pairs, tmp_path, settings)
    assert ours == reference and ours != _reference(trained, pairs, tmp_path, settings)  # the adapter counts
    assert not any("lora" in name for name, _ in model.named_parameters())  # the original is untouched


def test_conversion_is_cached_by_content_and_the_checkpoint_is_untouched(trained, tmp_path):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model, tokenizer = trained
    checkpoint = tmp_path / "checkpoint"
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    before = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in checkpoint.iterdir()}
    loaded = AutoModelForSeq2SeqLM.from_pretrained(checkpoint)
    loaded_tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    first, converted = converted_model(loaded, loaded_tokenizer, tmp_path / "cache", "float32")
    again, converted_again = converted_model(model, tokenizer, tmp_path / "cache", "float32")  # same content
    assert converted and not converted_again and first == again
    weights = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    int8, converted_int8 = converted_model(model, tokenizer, tmp_path / "cache", "int8")
    assert converted_int8 and int8 != first
    assert all(torch.equal(tensor, weights[name]) for name, tensor in model.state_dict().items())  # not quantised
    after = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in checkpoint.iterdir()}
    assert after == before
    assert not hasattr(model.config, "normalize_before")  # supplied to the converter's copy only


def test_the_cache_key_sees_the_smallest_change_of_any_weight(trained):
    """The conversion is found by a hash of the weights: a copy hashes alike, one element of one tensor moved by
    one float step (first and last tensor, first and last element) does not."""
    import copy

    from textbox.decoding.ctranslate2_cache import content_key

    model, tokenizer = trained
    key = content_key(model, tokenizer, "float32")
    assert content_key(copy.deepcopy(model), tokenizer, "float32") == key
    names = sorted(model.state_dict())
    for name, element in ((names[0], 0), (names[-1], -1)):
        changed = copy.deepcopy(model)
        with torch.no_grad():
            flat = changed.state_dict()[name].view(-1)
            flat[element] = torch.nextafter(flat[element], torch.tensor(float("inf")))
        assert content_key(changed, tokenizer, "float32") != key, name


def _token_often_followed_by_an_end(model, tokenizer, sources) -> int:
    """The token after which (forced first) the end token ranks 2nd to 4th for the most sources: where
    CTranslate2's beam search and transformers' part."""
    inputs = tokenizer(sources, return_tensors="pt", padding=True)
    start = model.config.decoder_start_token_id
    counts = []
    with torch.no_grad():
        for token in range(len(tokenizer)):
            decoder = torch.tensor([[start, token]] * len(sources))
            logits = model(**inputs, decoder_input_ids=decoder).logits[:, -1]
            rank = (logits > logits[:, [tokenizer.eos_token_id]]).sum(dim=1)
            counts.append((int(((rank >= 1) & (rank <= 3)).sum()), token))
    return max(counts)[1]


def test_beam_search_after_a_forced_first_token_decodes_as_generate_does(trained, pairs, tmp_path):
    """The mBART/M2M100 language-token path: CTranslate2 gave 2/60 outputs equal (length_penalty 2.0) and 93/240
    (four sequences per example) where the end token is likely right after the forced token. auto decodes it with
    transformers; greedy decoding keeps one hypothesis and still runs on CTranslate2, alike."""
    model, tokenizer = trained
    forced = _token_often_followed_by_an_end(model, tokenizer, [source for source, _ in pairs[:EXAMPLES]])
    settings = {"num_beams": 4, "early_stopping": True, "length_penalty": 2.0, "forced_bos_token_id": forced,
                "max_new_tokens": 10}
    assert _decode(trained, pairs, tmp_path, settings, "auto") == _reference(trained, pairs, tmp_path, settings)
    greedy = {"forced_bos_token_id": forced, "max_new_tokens": 10}
    assert choose_engine(model, greedy, "test", DecodingOptions("auto")).name == "ctranslate2"
    assert _decode(trained, pairs, tmp_path, greedy, "ctranslate2") == _reference(trained, pairs, tmp_path, greedy)


def test_a_damaged_conversion_in_the_cache_is_converted_again(trained, pairs, tmp_path, caplog):
    """A truncated model.bin (a copy cut short, a full disk) crashed every later decode of the model ("File
    model.bin is incomplete", exit 1): it is found, converted again, and the outputs are the model's."""
    model, tokenizer = trained
    settings = {"max_new_tokens": 10}
    expected = _decode(trained, pairs, tmp_path, settings, "ctranslate2")
    (converted,) = (tmp_path / "cache" / "ctranslate2").glob("[0-9a-f]*")
    weights = converted / "model.bin"
    size = weights.stat().st_size
    with open(weights, "r+b") as handle:
        handle.truncate(size // 2)
    from textbox.decoding import ctranslate2_engine

    ctranslate2_engine._loaded.clear()  # as in a new run
    with caplog.at_level(logging.WARNING):
        assert _decode(trained, pairs, tmp_path, settings, "ctranslate2") == expected
    assert "is damaged (model.bin has" in caplog.text and "converting the model again" in caplog.text
    assert weights.stat().st_size == size


@pytest.mark.parametrize("damaged", ["config.json", "vocabulary", "model.bin"])
def test_a_conversion_damaged_in_place_is_converted_again(trained, pairs, tmp_path, caplog, damaged):
    """Bytes of a cached conversion overwritten at the same size (a bad sector, a stray write, an editor): a
    config.json that was no longer UTF-8 stopped the run with "unexpected UnicodeDecodeError", the entry not named,
    and a model.bin with other bytes would have decoded with other weights. Every file's checksum is recorded when
    the entry is published and checked when it is read: the entry is named and converted again."""
    model, tokenizer = trained
    settings = {"max_new_tokens": 10}
    expected = _decode(trained, pairs, tmp_path, settings, "ctranslate2")
    (converted,) = (tmp_path / "cache" / "ctranslate2").glob("[0-9a-f]*")
    (path,) = [path for path in converted.iterdir() if path.name.startswith(damaged)
               or damaged == "vocabulary" and path.name.endswith("vocabulary.json")]
    written = path.read_bytes()
    middle = len(written) // 2
    path.write_bytes(written[:middle] + b"\xff\xfe\x00\x01" + written[middle + 4:])
    assert path.stat().st_size == len(written)
    from textbox.decoding import ctranslate2_engine

    ctranslate2_engine._loaded.clear()  # as in a new run
    with caplog.at_level(logging.WARNING):
        assert _decode(trained, pairs, tmp_path, settings, "ctranslate2") == expected
    assert f"the cached CTranslate2 conversion {converted} is damaged ({path.name}" in caplog.text
    assert "converting the model again" in caplog.text
    assert path.read_bytes() == written


def test_the_conversion_cache_tells_apart_tokenizers_with_other_special_tokens(trained, tmp_path):
    """The converter writes the tokenizer's special tokens into the converted model (and Pegasus and Marian start
    decoding from its pad or end token): the same weights and vocabulary with another pad token are another
    conversion."""
    import copy

    model, tokenizer = trained
    other = copy.deepcopy(tokenizer)
    other.bos_token = tokenizer.unk_token
    assert other.get_vocab() == tokenizer.get_vocab()
    first, _ = converted_model(model, tokenizer, tmp_path / "cache", "float32")
    second, converted = converted_model(model, other, tmp_path / "cache", "float32")
    assert converted and second != first
    assert json.loads((first / "config.json").read_text())["bos_token"] == tokenizer.bos_token
    assert json.loads((second / "config.json").read_text())["bos_token"] == other.bos_token


def test_sampling_seeds_of_nearby_runs_and_processes_never_coincide():
    """seed + process index made seed 7's process 1 sample exactly as seed 8's process 0."""
    from textbox.decoding.ctranslate2_engine import sampling_seed

    seeds = [sampling_seed(seed, process) for seed in range(7, 12) for process in range(4)]
    assert len(set(seeds)) == len(seeds) and sampling_seed(7, 1) == sampling_seed(7, 1)


class _RecordingEngine:
    """A loaded Translator whose translate_batch calls are recorded: (number of sources, max_batch_size)."""

    def __init__(self, engine):
        self.engine, self.calls = engine, []

    def translate_batch(self, sources, **arguments):
        self.calls.append((len(sources), arguments.get("max_batch_size")))
        return self.engine.translate_batch(sources, **arguments)


@pytest.mark.parametrize("eval_max_tokens", [None, 256])
def test_the_engine_batches_the_whole_shard_itself(trained, pairs, tmp_path, monkeypatch, eval_max_tokens):
    """One translate_batch call decodes every loader batch (CTranslate2 batches them itself, max_batch_size the
    loader's batch size), with generate's outputs; under eval_max_tokens a loader batch holding more examples than
    the first of its call starts a new call."""
    from textbox.decoding import ctranslate2_engine

    model, tokenizer = trained
    recorded = []
    real_load = ctranslate2_engine.load_engine
    monkeypatch.setattr(ctranslate2_engine, "load_engine",
                        lambda *args, **kwargs: recorded.append(_RecordingEngine(real_load(*args, **kwargs)))
                        or recorded[-1])
    from accelerate import Accelerator

    from textbox.evaluator.evaluator import Evaluator

    config = Config({**DEFAULTS, "eval_batch_size": 16, "eval_max_tokens": eval_max_tokens})
    evaluator = Evaluator(config, Accelerator(cpu=True), tokenizer, Seq2SeqCollator(tokenizer.pad_token_id))
    inputs = tokenizer([source for source, _ in pairs[:EXAMPLES]])["input_ids"]
    loader = evaluator.loader([{"input_ids": ids, "labels": []} for ids in inputs])
    sizes = [len(batch["index"]) for batch in loader]
    settings = {"num_beams": 4, "early_stopping": "never", "max_new_tokens": 10}  # no search decoded twice
    texts = {backend: generate_texts(evaluator.accelerator, model, tokenizer, loader, dict(settings), "test",
                                     DecodingOptions(backend, "float32", str(tmp_path / "cache"), 0))
             for backend in ("ctranslate2", "transformers")}
    assert texts["ctranslate2"] == texts["transformers"]
    runs = []  # [examples, first batch's size] of each run of batches none larger than its first
    for size in sizes:
        if runs and size <= runs[-1][1]:
            runs[-1][0] += size
        else:
            runs.append([size, size])
    calls = [list(call) for engine in recorded for call in engine.calls]
    assert calls == runs, sizes
    if eval_max_tokens is None:
        assert calls == [[EXAMPLES, 16]] and len(sizes) > 1
    else:
        assert len(set(sizes)) > 1 and 1 < len(calls) < len(sizes)
