"""A server's refusal in a one-line error: its message read from each shape servers send, bounded,
on one line, secrets redacted, and the fix named for the refusals Arena knows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena_core.loadgen.refusal import REASON_CHARS, known_fix, refusal, server_reason
from arena_core.redaction import remember

RECORDED = Path(__file__).resolve().parent / "fixtures" / "vllm_real" / "refusal.json"


def test_the_message_is_read_from_every_shape_a_server_sends():
    assert server_reason({"error": {"message": "bad model", "type": "NotFoundError", "code": 404}}) == "bad model"  # OpenAI, llama.cpp
    assert server_reason({"object": "error", "message": "too long", "type": "BadRequestError", "code": 400}) == "too long"  # vLLM
    assert server_reason({"detail": [{"msg": "field required"}]}) == '[{"msg": "field required"}]'  # FastAPI's validation
    assert server_reason({"error": "plain words"}) == "plain words"
    assert server_reason(None, b"Internal Server Error") == "Internal Server Error"
    assert server_reason(None) == ""
    assert server_reason({"unexpected": 1}) == '{"unexpected": 1}'


def test_a_message_is_one_bounded_line_with_secrets_redacted():
    remember("sk-refusal-secret-1234")
    said = server_reason({"error": {"message": "key sk-refusal-secret-1234 rejected\n\x1b[31mred\x1b[0m\r\n" + "x" * 5000}})
    assert "sk-refusal-secret" not in said and "[redacted]" in said
    assert "\n" not in said and "\x1b" not in said and "\r" not in said
    assert len(said) == REASON_CHARS and said.endswith("…")
    # a body that is not JSON, sent without end, is cut before it is decoded
    assert len(server_reason(None, b"\xff" * 10**6)) == REASON_CHARS


@pytest.mark.parametrize(
    ("message", "fix"),
    [
        (
            "As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template if the tokenizer does not define one.",
            "--chat-template",
        ),
        ("The model `gpt-4` does not exist.", "--served-model"),
        ("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens", "--max-model-len"),
        ("the request exceeds the available context size, try increasing it", "--ctx-size"),
    ],
)
def test_the_refusals_arena_knows_name_their_fix(message, fix):
    assert fix in known_fix(message)
    line = refusal(400, {"error": {"message": message}})
    assert line.startswith('HTTP 400: the server said "') and fix in line


def test_a_refusal_arena_does_not_know_says_what_the_server_said_and_no_fix():
    assert known_fix("rate limited") == ""
    assert refusal(429, {"error": {"message": "rate limited"}}) == 'HTTP 429: the server said "rate limited"'
    assert refusal(502, None) == "HTTP 502, with no message"


def test_the_real_vllm_refusal_without_a_chat_template_names_the_flag():
    """What vLLM 0.32 answered a chat when its model had no chat template (recorded)."""
    recorded = json.loads(RECORDED.read_text())
    line = refusal(recorded["status"], recorded["body"])
    assert recorded["status"] == 400 and "must provide a chat template" in line and "--chat-template" in line
