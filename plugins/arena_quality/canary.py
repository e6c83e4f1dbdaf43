"""The instruction-following canary: prompts with constraints a program can check.

Broken serving -- a wrong chat template, a tool parser eating the output, a stop token cut short --
costs a model 10 to 60 points of quality and shows in no speed figure. Each prompt here asks for
something plain (a sentence about a topic) under one checkable constraint: its case, its length,
a keyword, an ending, valid JSON with given keys, a list of exactly N items. The prompts are drawn
from a seeded generator, so every run asks the same ones; a share of them answered within their
constraint, with a 95 % interval, is the canary's figure; an answer that shows chat-template
tokens (``<|im_start|>``) fails the format, the mark of a server whose template is wrong.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable

from attrs import frozen

from arena_core import MeasuredQuality, QualityRequest
from arena_quality.asking import Answer, Pace, ask_all, asked_within, leaked_template
from arena_quality.records import measured_from

NAME = "instruction-canary"
SEED = 20261202
SUBSET_SIZE, FULL_SIZE = 24, 96
MAX_TOKENS = 120
TOPICS = ("the sea", "a bicycle", "coffee", "the moon", "a library", "rain", "a garden", "trains", "music", "winter", "bread", "mountains")
KEYWORDS = ("blue", "quiet", "seven", "river", "lantern", "orange")
ENDINGS = ("That is all.", "Thank you.", "The end.")
THINGS = ("fruits", "colours", "animals", "countries", "tools")


@frozen(kw_only=True)
class Item:
    prompt: str
    constraint: str
    check: Callable[[str], bool]


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9']+", text)


def _unfenced(text: str) -> str:
    """An answer without a Markdown code fence around it."""
    match = re.fullmatch(r"\s*```[a-zA-Z]*\s*\n?(.*?)\n?```\s*", text, re.DOTALL)
    return match.group(1) if match else text


def _json_with(keys: tuple[str, ...]) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            data = json.loads(_unfenced(text))
        except ValueError:
            return False
        return isinstance(data, dict) and all(key in data for key in keys)

    return check


def _items(count: int) -> Callable[[str], bool]:
    return lambda text: sum(1 for line in text.splitlines() if line.strip().startswith("- ")) == count


def _item(rng: random.Random) -> Item:
    topic = rng.choice(TOPICS)
    kind = rng.randrange(7)
    if kind == 0:
        return Item(
            prompt=f"Write one sentence about {topic}, in lowercase letters only.", constraint="lowercase", check=lambda t: bool(_words(t)) and t == t.lower()
        )
    if kind == 1:
        return Item(
            prompt=f"Write one sentence about {topic}, in CAPITAL LETTERS only.", constraint="uppercase", check=lambda t: bool(_words(t)) and t == t.upper()
        )
    if kind == 2:
        most = rng.randint(8, 15)
        prompt = f"Describe {topic} in at most {most} words."
        return Item(prompt=prompt, constraint=f"at most {most} words", check=lambda t, m=most: 0 < len(_words(t)) <= m)
    if kind == 3:
        word = rng.choice(KEYWORDS)
        prompt = f"Write two sentences about {topic} that use the word '{word}'."
        return Item(prompt=prompt, constraint=f"the keyword {word!r}", check=lambda t, w=word: w in t.lower())
    if kind == 4:
        ending = rng.choice(ENDINGS)
        prompt = f"Write two sentences about {topic}. End your reply with the exact words: {ending}"
        return Item(prompt=prompt, constraint=f"ends with {ending!r}", check=lambda t, e=ending: t.strip().strip("*_\"'").endswith(e))
    if kind == 5:
        keys = ("name", "colour") if rng.random() < 0.5 else ("title", "year")
        prompt = f"Reply with only a JSON object about {topic} with the keys {keys[0]!r} and {keys[1]!r}, and nothing else."
        return Item(prompt=prompt, constraint="valid JSON with its keys", check=_json_with(keys))
    count = rng.randint(3, 5)
    things = rng.choice(THINGS)
    prompt = f"List exactly {count} {things}, one per line, each line starting with '- ', and nothing else."
    return Item(prompt=prompt, constraint=f"a list of exactly {count} items", check=_items(count))


def items(count: int, seed: int = SEED) -> list[Item]:
    """The first ``count`` prompts of the seeded sequence (a subset is a prefix of the full set)."""
    rng = random.Random(seed)
    return [_item(rng) for _ in range(count)]


def _record(index: int, item: Item, answer: Answer) -> dict:
    """One prompt's record. An answer that leaks chat-template tokens failed the format (broken
    serving); one that repeats the prompt is no answer, whatever its words happen to meet."""
    leaked = leaked_template(answer.text)
    echoed = item.prompt in answer.text
    passed = not answer.error and not leaked and not echoed and item.check(answer.text)
    why = answer.error or (f"chat-template token {leaked} in the answer" if leaked else "the prompt repeated" if echoed else answer.finish_reason)
    return {
        "item": f"canary/{index}",
        "constraint": item.constraint,
        "passed": bool(passed),
        "format_failure": not answer.error and (not answer.text.strip() or bool(leaked)),
        "request_failed": bool(answer.error),
        "status": why,
        "prompt": item.prompt,
        "answer": answer.text,
        "head_tokens": list(answer.head_tokens),
    }


def run(request: QualityRequest) -> MeasuredQuality:
    started = time.monotonic()
    chosen = items(FULL_SIZE if request.full else SUBSET_SIZE)
    request.progress(f"quality: instruction canary, {len(chosen)} of {FULL_SIZE} prompts")
    answers = ask_all(request.endpoint, [i.prompt for i in chosen], max_tokens=MAX_TOKENS, pace=Pace.of(request), timeout_s=request.request_timeout_s)
    chosen, answers = asked_within(request, NAME, chosen, answers)
    records = [_record(index, item, answer) for index, (item, answer) in enumerate(zip(chosen, answers, strict=True))]
    return measured_from(
        request.output_dir,
        records,
        started=started,
        suite=NAME,
        benchmark="",
        metric="constraints met",
        of_total=FULL_SIZE,
        method=f"share of seeded prompts (seed {SEED}) whose checkable constraint the answer met, 95 % Wilson interval",
    )
