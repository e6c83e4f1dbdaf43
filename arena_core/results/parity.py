"""Two runs of the same model on two engines, side by side beyond speed: the difference of their
measured quality with its interval, and the parity of their outputs at temperature 0.

* **Quality difference**: A's share less B's, with Newcombe's hybrid score interval (method 10 of
  Newcombe 1998), built from each share's own 95 % Wilson interval, which is what a card keeps.
  Where it holds 0 the two are not told apart.
* **Output parity**: each quality record keeps its answer's first 64 tokens as its server
  tokenized them (``head_tokens``); of the items both runs answered, how many share those tokens,
  and where the first that differ part (item and token). Quality suites ask at temperature 0, so
  one model with the same weights and template gives the same tokens on any exact engine; where
  they differ, the weights (a dequantized GGUF), the kernels' arithmetic or the template do.
"""

from __future__ import annotations

import math
from pathlib import Path

from attrs import frozen

from arena_core.files import parse_json, read_file_bytes
from arena_core.loadgen.refusal import clean_text
from arena_core.types import MeasuredQuality

#: How many tokens of each answer are compared (the quality records keep this many).
HEAD_TOKENS = 64
#: A records file is read up to this size (it holds one suite's answers).
MAX_RECORDS_BYTES = 64 * 2**20
#: An item's name as a table shows it.
ITEM_CHARS = 60


def quality_difference(a: MeasuredQuality, b: MeasuredQuality) -> tuple[float, float, float]:
    """A's figure less B's, in points, and the 95 % interval of that difference (Newcombe)."""
    pa, pb = a.value / 100, b.value / 100
    la, ua, lb, ub = a.low / 100, a.high / 100, b.low / 100, b.high / 100
    difference = pa - pb
    low = difference - math.sqrt((pa - la) ** 2 + (ub - pb) ** 2)
    high = difference + math.sqrt((ua - pa) ** 2 + (pb - lb) ** 2)
    return difference * 100, low * 100, high * 100


@frozen(kw_only=True)
class Parity:
    """Of ``compared`` items both runs answered, ``agree`` share their first tokens."""

    suite: str
    agree: int
    compared: int
    #: where the first that differ part: "HumanEval/3 at token 12" ("" when all agree)
    first_difference: str = ""

    def said(self) -> str:
        where = f"; first differs: {self.first_difference}" if self.first_difference else ""
        return f"{self.agree} of {self.compared} answers share their first {HEAD_TOKENS} tokens{where}"


def _heads(path: Path) -> dict[str, tuple[int, ...]]:
    """Each item's answer head from a suite's records (items without one left out). The file is
    outside data (a store is copied between boxes, edited by hand): a regular file of at most
    :data:`MAX_RECORDS_BYTES`, each line JSON within bounds, each item's name cleaned."""
    heads: dict[str, tuple[int, ...]] = {}
    try:
        text = read_file_bytes(path, max_bytes=MAX_RECORDS_BYTES).decode("utf-8", "replace")
    except (OSError, ValueError):
        return heads
    for line in text.splitlines():
        try:
            record = parse_json(line, max_bytes=MAX_RECORDS_BYTES)
        except ValueError:
            continue
        head = record.get("head_tokens") if isinstance(record, dict) else None
        item = record.get("item") if isinstance(record, dict) else None
        if isinstance(item, str) and isinstance(head, list) and head and all(type(t) is int for t in head[:HEAD_TOKENS]):
            heads[clean_text(item, ITEM_CHARS)] = tuple(head[:HEAD_TOKENS])
    return heads


def output_parity(run_a: Path, run_b: Path, suite: str) -> Parity | None:
    """The parity of ``suite``'s answers in two run folders; None where either kept no heads."""
    a, b = (_heads(run / "quality" / suite / "records.jsonl") for run in (run_a, run_b))
    both = [item for item in a if item in b]
    if not both:
        return None
    agree, first = 0, ""
    for item in both:
        ha, hb = a[item], b[item]
        if ha == hb:
            agree += 1
        elif not first:
            at = next((i for i, (x, y) in enumerate(zip(ha, hb)) if x != y), min(len(ha), len(hb)))
            first = f"{item} at token {at + 1}"
    return Parity(suite=suite, agree=agree, compared=len(both), first_difference=first)
