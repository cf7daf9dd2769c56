"""One engine call per group of examples that ``generate``'s settings decode alike: queued on a loaded
CTranslate2 Translator/Generator, then each example's hypotheses picked as ``generate`` ranks them.

Decoder-only prompts are passed unpadded with ``include_prompt_in_result=False``: CTranslate2 runs the first
(shortest prompt - 1) tokens of every prompt at once, then the rest of each longer prompt token by token as a
forced prefix, and counts lengths from the end of each prompt. Two consequences, both handled by splitting a batch
into calls (``_by_prompt_length``):
- when the shortest prompt is a single token (an empty source: the separator alone) nothing is run at once and
  CTranslate2 counts lengths, and returns tokens, from the start of every prompt: such prompts get a call of their
  own;
- beam search after a forced prefix lets no beam but the best end at its first free step (the decoding.cc
  behaviour that keeps forced_bos_token_id with beams off CTranslate2), where generate ends any of the num_beams
  best: under beam search each prompt length gets its own call, so that no prompt has a forced prefix. (Tiny
  trained GPT-2, 60 examples, num_beams=4, length_penalty=0: 53/60 outputs equal in one call per batch.)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, NamedTuple, TypeVar, cast

from textbox.decoding.ctranslate2_cache import CTranslate2Failed
from textbox.decoding.ctranslate2_settings import Ctranslate2Call, ctranslate2_call, rerank_cut_hypotheses

if TYPE_CHECKING:
    from typing import TypeAlias

    import ctranslate2
    from transformers import GenerationConfig, PreTrainedTokenizerBase

    Engine: TypeAlias = ctranslate2.Translator | ctranslate2.Generator
    # One example's result of a call: a handle to wait on when the call was asynchronous
    EngineResult: TypeAlias = (ctranslate2.TranslationResult | ctranslate2.GenerationResult
                               | ctranslate2.AsyncTranslationResult | ctranslate2.AsyncGenerationResult)

Result = TypeVar("Result")


Wait = Callable[..., list[list[list[str]]]]  # wait(done=...): each example's hypotheses, best first


def _ignored(examples: int) -> None:
    """The default ``done``: no progress to report."""


class _Found(NamedTuple):
    """One example's result, read out of CTranslate2 once: every property read of a result converts its C++
    vectors into new Python lists."""

    hypotheses: list[list[str]]
    scores: list[float]  # only where the hypotheses are ranked again (rerank_cut); empty otherwise


def _found(result: ctranslate2.TranslationResult | ctranslate2.GenerationResult, with_scores: bool) -> _Found:
    """A TranslationResult's hypotheses or a GenerationResult's sequences (and their scores)."""
    return _Found(getattr(result, "hypotheses", None) or result.sequences,
                  list(result.scores) if with_scores else [])


class BatchDecoder:
    """Decodes examples with the calls ``generate``'s settings map to for the batches they came in."""

    def __init__(self, engine: Engine, kind: str, effective: GenerationConfig, tokenizer: PreTrainedTokenizerBase,
                 prefix: list[str] | None, vocabulary_size: int):
        self.engine, self.kind, self.effective, self.prefix = engine, kind, effective, prefix
        self.vocabulary_size = vocabulary_size
        self._last_shared: list[str] = []  # the static prompt of the last generator call
        end = effective.eos_token_id
        self.end_tokens = tokenizer.convert_ids_to_tokens(end if isinstance(end, list) else [end])

    def start(self, sources: list[list[str]], widths: list[int], max_batch_size: int) -> Wait:
        """Queues the decoding of ``sources`` on the engine (asynchronously: its worker decodes while Python reads
        the examples of the next call) and returns what waits for each example's num_return_sequences hypotheses
        (tokens), best first, telling ``done`` of each example whose search ended. ``widths``: each example's
        decoder input width in its loader batch; examples whose widths map to the same call go to one engine
        call, which batches them ``max_batch_size`` at a time."""
        calls: list[tuple[Ctranslate2Call, list[int]]] = []
        for width in sorted(set(widths)):
            call = ctranslate2_call(self.effective, self.kind, width, self.vocabulary_size)
            numbers = [number for number, each in enumerate(widths) if each == width]
            same = next((entry for entry in calls if entry[0] == call), None)
            if same is None:
                calls.append((call, numbers))
            else:
                same[1].extend(numbers)
        started = [(numbers, self._start([sources[n] for n in numbers], call, max_batch_size))
                   for call, numbers in calls]

        def wait(done: Callable[[int], None] = _ignored) -> list[list[list[str]]]:
            if len(started) == 1 and started[0][0] == list(range(len(sources))):
                return started[0][1](done)  # one call in the examples' order: nothing to put back
            found: list[list[list[str]]] = [[] for _ in sources]
            for numbers, hypotheses_of in started:
                for number, hypotheses in zip(numbers, hypotheses_of(done)):
                    found[number] = hypotheses
            return found
        return wait

    def _start(self, sources: list[list[str]], call: Ctranslate2Call, max_batch_size: int) -> Wait:
        arguments = {**call.arguments, "end_token": self.end_tokens, "max_batch_size": max_batch_size}

        def run(some: list[list[str]], **overrides: int | float | bool) -> list[EngineResult]:
            if self.kind == "translator":
                return self.engine.translate_batch(some, target_prefix=[self.prefix] * len(some) if self.prefix
                                                   else None, **{**arguments, **overrides})
            return _by_prompt_length(some, lambda part: self._generate(part, {**arguments, **overrides}),
                                     every_length=call.arguments["beam_size"] > 1)

        pending = engine_call(lambda: run(sources, asynchronous=True))

        def wait(done: Callable[[int], None] = _ignored) -> list[list[list[str]]]:
            found: list[_Found] = []
            reported = 0
            for result in pending:
                found.append(_found(engine_call(result.result), call.rerank_cut))
                if len(found) - reported == max_batch_size or len(found) == len(pending):  # an engine batch's worth
                    done(len(found) - reported)
                    reported = len(found)
            stops_when_ended = call.stops_when_ended
            if stops_when_ended is not None:
                engine_call(lambda: _complete_cut_searches(found, sources, run, self.end_tokens[0], stops_when_ended))
            return [self._pick(call, each) for each in found]
        return wait

    def _generate(self, prompts: list[list[str]], arguments: dict[str, object]) -> list[EngineResult]:
        """generate_batch, the tokens every prompt starts with given once as CTranslate2's ``static_prompt``: the
        engine runs them once for the batch, and keeps their state for the next calls when they start alike again
        (a few-shot evaluation's shared demonstrations, a chat template's system turn). Measured on a GPT-2, greedy
        and beam 4, ended by max_length or an end token: the same sequences and scores as the whole prompts. Each
        prompt keeps at least two tokens of its own, so that the length rules of the module docstring hold."""
        shared = shared_prefix(prompts)
        if len(shared) < SHARED_PREFIX_MINIMUM:
            return cast("list[EngineResult]", self.engine.generate_batch(prompts, **arguments))
        repeated = shared == self._last_shared  # kept only when it recurs: unique prefixes would fill the cache
        self._last_shared = shared
        return cast("list[EngineResult]", self.engine.generate_batch(
            [prompt[len(shared):] for prompt in prompts], static_prompt=shared, cache_static_prompt=repeated,
            **arguments))

    def _pick(self, call: Ctranslate2Call, found: _Found) -> list[list[str]]:
        hypotheses = found.hypotheses * call.copies
        if call.rerank_cut:
            hypotheses = rerank_cut_hypotheses(hypotheses, found.scores, self.end_tokens[0],
                                               call.arguments["length_penalty"], call.per_example,
                                               call.stops_when_ended)
        if len(hypotheses) != call.per_example:
            raise RuntimeError(f"CTranslate2 returned {len(hypotheses)} hypotheses for an example, expected "
                               f"{call.per_example}")
        return hypotheses


SHARED_PREFIX_MINIMUM = 8  # tokens: a shorter shared start is not worth a static prompt


def shared_prefix(prompts: list[list[str]]) -> list[str]:
    """The tokens every prompt starts with, leaving each at least two tokens of its own."""
    if not prompts:
        return []
    first, room = prompts[0], min(len(prompt) for prompt in prompts) - 2
    length = 0
    while length < room and all(prompt[length] == first[length] for prompt in prompts):
        length += 1
    return first[:length]


def engine_call(call: Callable[[], Result]) -> Result:
    """``call()`` (a call into the loaded Translator/Generator), its failure raised as CTranslate2Failed: auto then
    decodes with transformers and says why."""
    try:
        return call()
    except Exception as error:
        raise CTranslate2Failed(f"CTranslate2 failed while decoding ({failure_text(error)})") from error


def failure_text(error: BaseException) -> str:
    """``Type: first line of the message``, for a log line or an error message."""
    message = str(error).strip()
    return f"{type(error).__name__}: {message.splitlines()[0]}" if message else type(error).__name__


def _by_prompt_length(prompts: list[list[str]], generate: Callable[[list[list[str]]], Iterable[EngineResult]],
                      every_length: bool) -> list[EngineResult]:
    """``generate`` on groups of ``prompts`` (see the module docstring), results in the order of ``prompts``: each
    prompt length apart (``every_length``, beam search), or the single-token prompts apart from the others."""
    groups: dict[int, list[int]] = {}
    for number, prompt in enumerate(prompts):
        groups.setdefault(len(prompt) if every_length else min(len(prompt), 2), []).append(number)
    if len(groups) == 1:
        return list(generate(prompts))
    results: list[EngineResult | None] = [None] * len(prompts)
    for group in groups.values():
        for number, result in zip(group, generate([prompts[number] for number in group])):
            results[number] = result
    return cast("list[EngineResult]", results)  # the groups share out every prompt: each place is filled


def _complete_cut_searches(found: list[_Found], sources: list[list[str]], decode: Callable[..., list[EngineResult]],
                           end_token: str, beams: int) -> None:
    """Under early_stopping=True with a forced end token, a search that reached the length bound returns only its
    ``beams`` best hypotheses (CTranslate2 allows no more at patience 1), which may hide how many had ended: the
    examples concerned are decoded again with patience 2, whose search is the same up to the bound (fewer than
    ``beams`` had ended before it) and which returns every hypothesis (fewer than 2 x beams)."""
    cut = [number for number, each in enumerate(found)
           if any(not hypothesis or hypothesis[-1] != end_token for hypothesis in each.hypotheses)]
    if cut:
        again = decode([sources[number] for number in cut], patience=2.0, num_hypotheses=2 * beams)
        for number, result in zip(cut, again):
            found[number] = _found(result, with_scores=True)
