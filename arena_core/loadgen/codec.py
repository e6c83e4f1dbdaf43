"""Token-exact prompts without the internet: three ways to turn text into tokens and back.

1. :class:`ServerCodec` -- the server's own ``/tokenize`` and ``/detokenize`` (llama.cpp and
   vLLM both have them, with different field names): exact for the model being measured.
2. :class:`LocalCodec` -- a ``tokenizer.json`` file through the ``tokenizers`` package.
3. :class:`ApproximateCodec` -- groups of characters whose size is measured from the server's
   ``usage`` on two probe requests: lengths are right on average, not token-exact.

:func:`choose_codec` takes the first that works and says which (``Codec.description``), and that
description is stored with every result.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from arena_core.errors import UsageError
from arena_core.loadgen.chat import SETUP_DEADLINE_S, ChatClient, ServerRefused
from arena_core.loadgen.http import HttpError
from arena_core.loadgen.hub_cache import find_tokenizer
from arena_core.loadgen.plausible import prompt_fits, vocabulary_problem

PROBE_TEXT_CHARS = 4000


class Codec(Protocol):
    description: str
    exact: bool

    async def encode(self, text: str) -> list[int]: ...

    async def decode(self, ids: Sequence[int]) -> str: ...


class DatasetCodec(Codec, Protocol):
    """What ``vllm bench serve``'s datasets ask of a tokenizer beyond encode and decode."""

    async def encode_with_special(self, text: str) -> list[int]: ...

    async def vocabulary(self) -> tuple[int, frozenset[int], int]:
        """``(vocab_size, special token ids, special tokens added to one sequence)``."""
        ...


class LocalCodec:
    """A local ``tokenizer.json`` (a file, or a directory holding one)."""

    exact = True

    def __init__(self, path: Path) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise UsageError("a local tokenizer needs the tokenizers package: pip install tokenizers") from None
        file = path / "tokenizer.json" if path.is_dir() else path
        try:
            self._tokenizer = Tokenizer.from_file(str(file))
        except Exception as exc:  # tokenizers raises its own Exception type for bad files
            raise UsageError(f"{file}: not a usable tokenizer.json ({exc})") from None
        self.description = f"local tokenizer {file}"

    async def encode(self, text: str) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    async def decode(self, ids: Sequence[int]) -> str:
        return self._tokenizer.decode(list(ids), skip_special_tokens=False)

    async def encode_with_special(self, text: str) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=True).ids

    async def vocabulary(self) -> tuple[int, frozenset[int], int]:
        # As transformers' fast tokenizers define them: the base vocabulary without added
        # tokens, the added tokens marked special, and what the post-processor adds.
        tokenizer = self._tokenizer
        special = frozenset(i for i, token in tokenizer.get_added_tokens_decoder().items() if token.special)
        processor = tokenizer.post_processor
        added = processor.num_special_tokens_to_add(False) if processor is not None else 0
        return tokenizer.get_vocab_size(with_added_tokens=False), special, added


class ServerCodec:
    """The server's ``/tokenize`` and ``/detokenize``, in llama.cpp's or vLLM's dialect."""

    exact = True

    def __init__(self, client: ChatClient) -> None:
        self._client = client
        self.description = f"server {client.endpoint.base_url}/tokenize"

    async def encode(self, text: str) -> list[int]:
        answer = await self._client.call_ok(
            "POST",
            "/tokenize",
            # llama.cpp reads "content", vLLM "prompt" and "model"; each ignores the other keys.
            {"content": text, "prompt": text, "model": self._client.endpoint.model, "add_special": False, "add_special_tokens": False},
            deadline_s=SETUP_DEADLINE_S,
        )
        return _token_list(answer)

    async def decode(self, ids: Sequence[int]) -> str:
        answer = await self._client.call_ok("POST", "/detokenize", {"tokens": list(ids), "model": self._client.endpoint.model}, deadline_s=SETUP_DEADLINE_S)
        text = answer.get("content", answer.get("prompt")) if isinstance(answer, dict) else None
        if not isinstance(text, str):
            raise UsageError(f"{self._client.endpoint.base_url}/detokenize answered without text")
        return text

    async def encode_with_special(self, text: str) -> list[int]:
        answer = await self._client.call_ok(
            "POST",
            "/tokenize",
            {"content": text, "prompt": text, "model": self._client.endpoint.model, "add_special": True, "add_special_tokens": True},
            deadline_s=SETUP_DEADLINE_S,
        )
        return _token_list(answer)

    async def vocabulary(self) -> tuple[int, frozenset[int], int]:
        """llama.cpp reports ``n_vocab`` in ``/v1/models``. vLLM does not, nor in its opt-in
        ``/tokenizer_info`` (the tokenizer's configuration, without a size), but both name the
        model: its ``tokenizer.json`` is then looked for on this machine (:mod:`hub_cache`)."""
        base = self._client.endpoint.base_url
        models = await self._client.call_ok("GET", "/v1/models", deadline_s=SETUP_DEADLINE_S)
        listed = models.get("data") if isinstance(models, dict) else None
        entries = [e for e in listed if isinstance(e, dict)] if isinstance(listed, list) else []  # whatever shape a server sends
        for entry in entries:
            meta = entry.get("meta")
            size = meta.get("n_vocab") if isinstance(meta, dict) else None
            if isinstance(size, int) and size > 0:
                if problem := vocabulary_problem(size):  # it sizes the ids the random dataset draws from
                    raise ServerRefused(f"{base}/v1/models: {problem}")
                return size, frozenset(), await self._special_added()
        status, info, exchange = await self._client.call("GET", "/tokenizer_info", deadline_s=SETUP_DEADLINE_S)
        if exchange.error and exchange.head_ns is None:  # gone, not "without /tokenizer_info"
            raise HttpError(f"GET {base}/tokenizer_info: {exchange.error}")
        named = info.get("name_or_path") if status == 200 and not exchange.error and isinstance(info, dict) else None
        names = [n for n in (named, *(e.get("root") for e in entries), *(e.get("id") for e in entries)) if isinstance(n, str) and n]
        found = find_tokenizer(names, server_here=self._client.endpoint.on_this_machine)
        if found is None:
            model = f" ({names[0][:100]})" if names else ""
            raise UsageError(
                f"{base} does not report its vocabulary size, and no tokenizer.json of its model{model} is on this machine;"
                " give it with --tokenizer (huggingface-cli download MODEL tokenizer.json) for the random dataset"
            )
        self.description += f"; vocabulary from {found}"
        return await LocalCodec(found).vocabulary()

    async def _special_added(self) -> int:
        """How many tokens the server adds to one sequence (a BOS): tokenized with and without."""
        plain, special = await self.encode("a"), await self.encode_with_special("a")
        return min(max(0, len(special) - len(plain)), 8)

    @staticmethod
    async def probe(client: ChatClient) -> bool:
        """Whether the server tokenizes (one small call)."""
        status, parsed, exchange = await client.call(
            "POST", "/tokenize", {"content": "probe", "prompt": "probe", "model": client.endpoint.model}, deadline_s=SETUP_DEADLINE_S
        )
        if exchange.error and exchange.head_ns is None:  # no answer at all: a server that went away, never one without /tokenize
            raise HttpError(f"POST {client.endpoint.base_url}/tokenize: {exchange.error}")
        return status == 200 and _token_list(parsed, strict=False) is not None


def _token_list(answer: Any, strict: bool = True) -> list[int] | None:
    tokens = answer.get("tokens") if isinstance(answer, dict) else None
    if isinstance(tokens, list) and tokens and isinstance(tokens[0], dict):  # llama.cpp with_pieces
        tokens = [item.get("id") for item in tokens]
    if isinstance(tokens, list) and all(isinstance(t, int) for t in tokens):
        return tokens
    if strict:
        raise UsageError("the server's /tokenize answer has no token list")
    return None


class ApproximateCodec:
    """Character groups of a measured average size stand in for tokens.

    "Token" *i* of a text is its *i*-th group of ``chars_per_token`` characters (the ids are
    positions in the corpus the codec was built from), so slices decode back to real text.
    """

    exact = False

    def __init__(self, chars_per_token: float) -> None:
        self.chars_per_token = chars_per_token
        self.description = f"approximate: {chars_per_token:.2f} characters per token, from the server's usage on two probes"
        self._groups: list[str] = []

    async def encode(self, text: str) -> list[int]:
        size = self.chars_per_token
        start_id = len(self._groups)
        count = max(1, round(len(text) / size)) if text else 0
        bounds = [round(i * len(text) / count) for i in range(count + 1)] if count else [0]
        self._groups.extend(text[bounds[i] : bounds[i + 1]] for i in range(count))
        return list(range(start_id, start_id + count))

    async def decode(self, ids: Sequence[int]) -> str:
        return "".join(self._groups[i] for i in ids)

    @classmethod
    async def measure(cls, client: ChatClient, sample: str) -> ApproximateCodec:
        """Two non-streamed probes: a long text and a one-character text; the difference in
        ``usage.prompt_tokens`` over the difference in length is the characters per token."""
        text = sample[:PROBE_TEXT_CHARS]

        async def prompt_tokens(content: str) -> int:
            answer = await client.call_ok(
                "POST", "/v1/chat/completions", {"model": client.endpoint.model, "messages": [{"role": "user", "content": content}], "max_tokens": 1}
            )
            usage = answer.get("usage") if isinstance(answer, dict) else None
            if not isinstance(usage, dict) or not isinstance(usage.get("prompt_tokens"), int):
                raise UsageError(
                    f"{client.endpoint.base_url} has no /tokenize and reports no usage: give a tokenizer.json (--tokenizer) to build token-exact prompts"
                )
            count = usage["prompt_tokens"]
            if count <= 0 or not prompt_fits(count, len(content.encode())):
                raise ServerRefused(
                    f"{client.endpoint.base_url}: the server's usage says {count} prompt tokens for {len(content)} characters, which cannot be true"
                )
            return count

        long_count, short_count = await prompt_tokens(text), await prompt_tokens(".")
        tokens = max(1, long_count - short_count)
        return cls(max(1.0, (len(text) - 1) / tokens))


async def choose_codec(client: ChatClient, tokenizer: Path | None, sample: str) -> Codec:
    """A local tokenizer if one is named, else the server's tokenizer, else the approximation."""
    if tokenizer is not None:
        return LocalCodec(tokenizer)
    if await ServerCodec.probe(client):
        return ServerCodec(client)
    return await ApproximateCodec.measure(client, sample)
