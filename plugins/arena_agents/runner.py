"""The ``agents`` runner: coding-agent sessions, ``agents`` of them at once.

Each session is planned from the workload's seed (:func:`arena_agents.sessions.plan_sessions`)
and its text built from the corpus before the first request, so one seed is one workload on
every server. A session's requests offer :data:`~arena_agents.sessions.TOOLS` and carry its
history as an agent's framework sends it:

1. a system message: the shared prefix (every session's the same);
2. a user message: the session's own context, then the line asking for its first call;
3. per turn after the first: the call asked before as the assistant's ``tool_calls``, then a
   ``tool`` message with that tool's output, which ends with the line asking for the next call.

The history replays the planned calls whatever the model answered (a replay, as AIPerf's and
InferenceX's agentic traces are), so every server is sent the same prompts. Before each turn
after the first the agent waits for its tool (the turn's delay). Each answer's calls are read
from the stream and judged against the call asked (:mod:`arena_agents.summary`).
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import attrs

import arena_core as arena
from arena_agents.sessions import TOOLS, PlannedSession, plan_sessions
from arena_agents.summary import AgentTurn, agents_result

NAME = "agents"
#: The longest a set-up read of the server's context (``/v1/models``, ``/props``) may take.
CONTEXT_DEADLINE_S = 30.0
#: The system message's opening, before the shared prefix's corpus text.
SYSTEM = "You are a coding agent working in a repository. Answer each request with the one tool call it asks for.\n\n"


@attrs.frozen(kw_only=True)
class SessionText:
    """A planned session's messages: the system and first user message, then each later turn's tool output."""

    session: PlannedSession
    system: str
    opening: str
    outputs: tuple[str, ...]


def _shape(workload: arena.WorkloadSpec) -> arena.AgentShape:
    if not isinstance(workload.shape, arena.AgentShape):
        raise arena.UsageError(f"workload {workload.name!r}: the {NAME} runner needs an agents shape")
    return workload.shape


def messages_for(text: SessionText, turn: int) -> list[dict[str, Any]]:
    """The messages of ``turn``'s request (0 first): the history replayed with the planned calls."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": text.system}, {"role": "user", "content": text.opening}]
    for earlier, planned in enumerate(text.session.turns[:turn]):
        call_id = f"call_{text.session.index}_{earlier}"
        call = {"id": call_id, "type": "function", "function": {"name": planned.tool, "arguments": planned.arguments}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": f"{text.outputs[earlier]}\n\n{text.session.turns[earlier + 1].asked()}"})
    return messages


async def session_texts(shape: arena.AgentShape, plan: tuple[PlannedSession, ...], prompts: arena.PromptBuilder) -> list[SessionText]:
    """Every session's text, built in order (so from the seed alone); the shared prefix once."""
    _, shared = await prompts.build(shape.shared_prefix_tokens)
    texts = []
    for session in plan:
        _, own = await prompts.build(shape.session_context_tokens) if shape.session_context_tokens else ("", "")
        outputs = [(await prompts.build(turn.output_tokens))[1] for turn in session.turns[:-1]]
        opening = f"{own}\n\n{session.turns[0].asked()}" if own else session.turns[0].asked()
        texts.append(SessionText(session=session, system=SYSTEM + shared, opening=opening, outputs=tuple(outputs)))
    return texts


async def server_context(client: arena.ChatClient) -> tuple[int, str] | None:
    """The model's context as the server states it, and where: vLLM's ``max_model_len`` in the
    model list, llama.cpp's ``n_ctx`` of a slot in ``/props``; None where it says neither (or
    says a number no server serves)."""
    status, models, _ = await client.call("GET", "/v1/models", deadline_s=CONTEXT_DEADLINE_S)
    entries = models.get("data") if status == 200 and isinstance(models, dict) else None
    for entry in entries[:64] if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == client.endpoint.model and not arena.bounds.TOKENS.problem(told := entry.get("max_model_len")):
            return told, "the server's max_model_len"
    status, props, _ = await client.call("GET", "/props", deadline_s=CONTEXT_DEADLINE_S)
    settings = props.get("default_generation_settings") if status == 200 and isinstance(props, dict) else None
    told = settings.get("n_ctx") if isinstance(settings, dict) else None
    return (told, "the server's n_ctx per slot") if not arena.bounds.TOKENS.problem(told) else None


async def fitted_plan(shape: arena.AgentShape, workload: arena.WorkloadSpec, client: arena.ChatClient) -> tuple[PlannedSession, ...]:
    """The sessions, each ended before it passes the shape's cap or the server's context (the
    template's tokens around each turn aside); a shape whose first turn fits neither is a
    UsageError with the numbers, before any request."""
    stated = await server_context(client)
    template = shape.context_needed() - shape.context_cap_tokens
    room = stated[0] - template if stated else shape.context_cap_tokens
    fitted = attrs.evolve(shape, context_cap_tokens=max(1, min(shape.context_cap_tokens, room)))
    try:
        return plan_sessions(fitted, shape.agents, workload.seed)
    except ValueError as exc:
        where = f" ({stated[1]}: {stated[0]:,} tokens, less {template:,} for the chat template)" if stated and room < shape.context_cap_tokens else ""
        raise arena.UsageError(f"workload {workload.name!r}: {exc}{where}") from None


class NativeInstrument:
    """Arena's own: no reference tool replays agent sessions."""

    def run(self, workload: arena.WorkloadSpec, context: arena.RunContext) -> arena.WorkloadResult:
        return arena.run_measurement(self._run(workload, context))

    async def _run(self, workload: arena.WorkloadSpec, context: arena.RunContext) -> arena.WorkloadResult:
        shape = _shape(workload)
        text_tokens = shape.shared_prefix_tokens + shape.agents * (shape.session_context_tokens + shape.turns * shape.tool_output_tokens[1])
        corpus = arena.load_corpus(context.options.corpus, max(text_tokens, 20_000) * 5)
        client = arena.ChatClient(context.endpoint, request_timeout=context.options.request_timeout_s)
        writer = arena.RecordWriter(context.path("records.jsonl"))
        turns: list[AgentTurn] = []
        try:
            plan = await fitted_plan(shape, workload, client)
            codec = await arena.choose_codec(client, context.options.tokenizer, corpus.text)
            prompts = arena.PromptBuilder(await codec.encode(corpus.text), codec, workload.seed, stream=workload.name)
            texts = await session_texts(shape, plan, prompts)
            sessions = [_Session(text, await _text_tokens(codec, text), shape, workload.name, client, context) for text in texts]
            # records go to disk in a thread of their own: an fsync on the loop would hold the other agents' timestamps
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="agents-records") as disk:
                results = await asyncio.gather(*(session.run(writer, disk) for session in sessions))
            turns = [turn for done in results for turn in done]
        finally:
            await client.close()
        context.write_json("session.json", {"tokenizer": codec.description, "corpus": corpus.source, "instrument": "native", "sessions": len(plan)})
        return agents_result(turns, shape, workload.name)


async def _text_tokens(codec: arena.Codec, text: SessionText) -> tuple[int, ...]:
    """The tokens of the system message's text, then of the text in each turn's request (the
    system, the opening and the outputs so far): what a prefix cache can hold of them, the
    template's tokens aside."""
    system = len(await codec.encode(text.system))
    base = system + len(await codec.encode(text.opening))
    counts, total = [system, base], base
    for earlier, output in enumerate(text.outputs):
        total += len(await codec.encode(f"{output}\n\n{text.session.turns[earlier + 1].asked()}"))
        counts.append(total)
    return tuple(counts)


class _Session:
    """One agent: its turns one after another, each after its tool's delay. Every turn's request
    is prepared (its JSON encoded) before the workload starts, as the history is the plan's: no
    agent encodes a long history while the others' answers stream."""

    def __init__(
        self, text: SessionText, text_tokens: tuple[int, ...], shape: arena.AgentShape, workload: str, client: arena.ChatClient, context: arena.RunContext
    ) -> None:
        self.text, self.text_tokens, self.shape, self.workload, self.client, self.context = text, text_tokens, shape, workload, client, context
        self.requests = tuple(client.prepare(self._body(turn)) for turn in range(len(text.session.turns)))

    def _body(self, turn: int) -> dict[str, Any]:
        return {
            "model": self.context.endpoint.model,
            "messages": messages_for(self.text, turn),
            "tools": list(TOOLS),
            "tool_choice": "auto",
            "max_tokens": self.shape.answer_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }

    async def run(self, writer: arena.RecordWriter, disk: Executor) -> list[AgentTurn]:
        done: list[AgentTurn] = []
        writes = []
        planned = self.text.session.turns
        for turn, asked in enumerate(planned):
            if turn:
                await asyncio.sleep(planned[turn - 1].delay_s)  # the agent runs the tool it was answered
            exchange, sink = await self.client.stream(self.requests[turn])
            record = arena.record_from(
                exchange, sink, workload=self.workload, run_index=1, request_index=self.text.session.index, turn_index=turn,
                phase="agent", expected_prompt_tokens=self.text_tokens[turn + 1], max_tokens=self.shape.answer_tokens,
            )  # fmt: skip
            writes.append(asyncio.get_running_loop().run_in_executor(disk, writer.append, [record]))
            done.append(
                AgentTurn(
                    record=record,
                    tool=asked.tool,
                    arguments=json.loads(asked.arguments),
                    text_tokens=self.text_tokens[turn + 1],
                    shared_tokens=self.text_tokens[0],
                )
            )
            said = done[-1].judged() if record.ok else record.error[:120]
            self.context.say(f"{self.workload}: agent {self.text.session.index + 1}, turn {turn + 1}/{len(planned)}: {said}")
            if not record.ok and (record.http_status is None or 400 <= record.http_status < 500):
                break  # the server is gone, or refused what every later turn asks too (tools, the history): this agent stops
        await asyncio.gather(*writes)
        return done
