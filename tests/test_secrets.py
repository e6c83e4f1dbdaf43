"""Secrets, tried as an attacker and an unlucky user would: a key leaves Arena only in the
Authorization header to the server it is for. One test per way it could leak; each runs the
console script."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from arena_core.testing import arena, rig_run_argv
from arena_core.testing.fake_server import FakeServerProcess

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
KEY = "sk-arena-SECRET-51d0c8b7e2"


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    (line,) = [line for line in done.stderr.strip().splitlines() if line.startswith("arena: error:")]
    return line


def every_text(*folders: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for folder in folders if folder.exists() for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (KEY + "\nsecond-line-of-the-file\n", "spans more than one line"),
        (KEY + "\r\n" + KEY + "\r\n", "spans more than one line"),
        ("sk-ключ-" + KEY + "\n", "characters an HTTP header cannot carry"),
        ("sk with space " + KEY, "characters an HTTP header cannot carry"),
    ],
)
@pytest.mark.slow
def test_a_bad_key_file_is_refused_without_printing_the_key(tmp_path, content, needle):
    (tmp_path / "key.txt").write_text(content, encoding="utf-8")
    done = arena("run", "--base-url", "http://127.0.0.1:9", "--api-key-file", "key.txt", "--workloads", "chat", cwd=tmp_path, timeout=60)
    line = one_error_line(done)
    assert done.returncode == 2 and needle in line and "--api-key-file" in line
    assert "SECRET-51d0" not in done.stdout + done.stderr and "ключ" not in done.stderr


@pytest.mark.slow
def test_credentials_in_a_base_url_are_refused_and_stored_nowhere(tmp_path):
    done = arena("run", "--base-url", f"http://user:{KEY}@127.0.0.1:9", "--workloads", "chat", cwd=tmp_path, timeout=60)
    line = one_error_line(done)
    assert done.returncode == 2 and line.startswith("arena: error: --base-url: credentials in the URL are not accepted")
    assert "SECRET-51d0" not in done.stdout + done.stderr and "SECRET-51d0" not in every_text(tmp_path)
    (tmp_path / "arena.toml").write_text(f'[endpoint]\nbase_url = "ftp://{KEY}@127.0.0.1:9"\n')
    done = arena("run", "--workloads", "chat", cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "arena.toml: $.endpoint.base_url: expected an http:// or https://" in one_error_line(done)
    assert "SECRET-51d0" not in done.stderr


@pytest.mark.slow
def test_a_redirect_is_not_followed_with_the_key(tmp_path):
    """The server answers /v1/models with a redirect to another origin; that origin must never
    see the key, and the user is told what happened."""
    seen: list[str] = []

    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers.get("Authorization", ""))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"data": [{"id": "stolen"}]}')

        def log_message(self, *args):
            pass

    elsewhere = http.server.HTTPServer(("127.0.0.1", 0), Elsewhere)

    class Redirects(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{elsewhere.server_port}{self.path}")
            self.end_headers()

        def log_message(self, *args):
            pass

    redirecting = http.server.HTTPServer(("127.0.0.1", 0), Redirects)
    for server in (elsewhere, redirecting):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {**os.environ, "ARENA_TEST_KEY": KEY}
        done = arena(
            "run", "--base-url", f"http://127.0.0.1:{redirecting.server_port}", "--api-key-env", "ARENA_TEST_KEY", "--workloads", "chat", cwd=tmp_path, env=env
        )
    finally:
        elsewhere.shutdown()
        redirecting.shutdown()
    assert done.returncode == 2 and "Arena does not follow redirects" in one_error_line(done)
    assert seen == []  # the other origin was never asked, so it never saw the key


@pytest.mark.slow
def test_a_server_that_echoes_the_key_gets_it_redacted_everywhere(tmp_path):
    """Every third chat request is answered 500 with the Authorization header in the message:
    records, results, verdicts, cards and the terminal show [redacted], never the key."""
    env = {**os.environ, "ARENA_TEST_KEY": KEY}
    rig_args = ["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--api-key", KEY, "--fault", "echo-auth", "--fail-every", "3", "--fail-status", "500"]
    with FakeServerProcess(rig_args) as rig:
        run = subprocess.run(
            rig_run_argv(rig.url, tmp_path / "store", tokenizer=TOKENIZER, workloads="chat", scale="0.02", extra=["--api-key-env", "ARENA_TEST_KEY"]),
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            cwd=tmp_path,
        )
    assert run.returncode == 4, run.stderr[-2000:]  # finished, with failed requests: invalid
    (run_dir,) = [p for p in (tmp_path / "store").iterdir() if (p / "manifest.json").is_file()]
    records = (run_dir / "workloads" / "chat" / "records.jsonl").read_text()
    assert "[redacted]" in records and "headers were: Authorization: Bearer [redacted]" in records
    card = arena("card", run_dir.name, "--output", "store", cwd=tmp_path, env=env)
    assert card.returncode == 0 and "[redacted]" in card.stdout
    assert "SECRET-51d0" not in every_text(tmp_path / "store") + run.stdout + run.stderr + card.stdout + card.stderr


@pytest.mark.skipif(not (Path(sys.executable).parent / "llama-benchy").exists(), reason="llama-benchy is not installed")
@pytest.mark.slow
def test_the_external_llama_benchy_never_has_the_key_on_its_command_line(tmp_path):
    """Every process's command line is readable by every local user (ps, /proc/PID/cmdline):
    while the real llama-benchy measures with a key, no process's argv holds it."""
    env = {**os.environ, "ARENA_TEST_KEY": KEY, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    seen_benchy, seen_key = [], []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
                try:
                    argv = cmdline.read_bytes()
                except OSError:
                    continue
                if b"llama-benchy" in argv and b"--pp" in argv:
                    seen_benchy.append(argv)
                if KEY.encode() in argv and b"fake_server" not in argv:  # (the rig is told its key on its own command line)
                    seen_key.append(argv)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "5", "--api-key", KEY]) as rig:
        watcher.start()
        argv = rig_run_argv(rig.url, tmp_path / "store", tokenizer=TOKENIZER / "tokenizer.json", workloads="chat", scale="0.02")
        done = subprocess.run([*argv, "--instrument", "external", "--api-key-env", "ARENA_TEST_KEY"], capture_output=True, text=True, timeout=300, env=env)
        stop.set()
        watcher.join()
    assert done.returncode == 0, done.stderr[-2000:]  # the key reached the server: every request was let in
    assert seen_benchy and not seen_key
    result = json.loads(next((tmp_path / "store").glob("*/workloads/chat/result.json")).read_text())
    assert result["instrument"] == "external" and result["verdict"]["valid"]


@pytest.mark.slow
def test_terminal_escapes_from_a_server_never_reach_the_terminal(tmp_path):
    """A model id that writes the clipboard (OSC 52) and recolours the screen (CSI, in both its
    ESC and its one-byte C1 form): `arena run` and `arena card` print it escaped, never raw."""
    evil = "evil\x1b]52;c;aGVsbG8=\x07-\x9b31m-\x1b[2J-model"
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "1", "--model", evil]) as rig:
        run = subprocess.run(
            rig_run_argv(rig.url, "store", tokenizer=TOKENIZER, workloads="chat", scale="0.02"), capture_output=True, text=True, timeout=300, cwd=tmp_path
        )
    assert run.returncode == 0, run.stderr[-2000:]
    (run_dir,) = [p for p in (tmp_path / "store").iterdir() if (p / "manifest.json").is_file()]
    outputs = [run.stdout, run.stderr]
    for fmt in ("text", "markdown", "json"):
        card = arena("card", run_dir.name, "--output", "store", "--format", fmt, cwd=tmp_path)
        assert card.returncode == 0, card.stderr
        outputs.append(card.stdout)
    outputs.append(arena("show", "run", run_dir.name, "--output", "store", cwd=tmp_path).stdout)
    assert any("evil\\u001b]52;c;aGVsbG8=\\u0007-\\u009b31m" in out for out in outputs)  # shown, escaped
    for out in outputs:
        assert not any(ch in out for ch in "\x1b\x07\x9b"), repr(out[:300])
    json.loads(outputs[4])  # the escaped JSON is still JSON


def test_the_public_echo_gives_plugin_commands_the_same_safety(capsys):
    """A third-party command prints with ``arena_core.echo``: escapes shown, known keys redacted."""
    from arena_core import echo
    from arena_core.redaction import remember

    remember("sk-plugin-test-key-123")
    echo("model evil\x1b]52;c;aGVsbG8=\x07 key sk-plugin-test-key-123")
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\u001b]52" in out
    assert "sk-plugin-test-key-123" not in out
