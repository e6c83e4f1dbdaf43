"""Results that travel: a run bundled and signed, checked offline anywhere, each tamper refused
in one line naming what, imported once into a store whose site shows who signed each row, and
exported as the reference tools' own files that ``arena import`` reads back to the same figures.

One rig run (chat, closed loop; monday-peak, open loop) is measured for the whole module."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from compare import flat
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from arena_bundles import layout
from arena_bundles.keys import fingerprint, public_text
from arena_core import standalone_card
from arena_core.run.manifest import content_seal
from arena_core.testing import arena, rig_run_argv
from arena_core.testing.fake_server import FakeServerProcess

pytestmark = pytest.mark.slow  # one rig run for the module

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one rig run of chat and monday-peak: (store, run id)."""
    store = tmp_path_factory.mktemp("measured") / "store"
    with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json")]) as rig:
        done = subprocess.run(
            rig_run_argv(rig.url, store, tokenizer=TOKENIZER, workloads="chat,monday-peak", scale="0.02"), capture_output=True, text=True, timeout=300
        )
    assert done.returncode == 0, done.stderr[-2000:]
    (run_dir,) = [p for p in store.iterdir() if (p / "manifest.json").is_file()]
    return store, run_dir.name


def keyed(folder: Path, name: str = "signing-key") -> dict[str, str]:
    """An environment whose signing key is a new one in ``folder``."""
    env = {**os.environ, "ARENA_SIGNING_KEY_FILE": str(folder / name)}
    env.pop("ARENA_SIGNING_KEY", None)
    made = arena("keys", "new", env=env)
    assert made.returncode == 0, made.stderr
    return env


@pytest.fixture(scope="module")
def bundled(measured: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The run's bundle and the environment holding its signer's key."""
    store, run_id = measured
    folder = tmp_path_factory.mktemp("bundled")
    env = keyed(folder)
    made = arena("bundle", run_id, "--output", str(store), "--to", str(folder), env=env)
    assert made.returncode == 0, made.stderr
    (bundle,) = folder.glob("*" + layout.SUFFIX)
    assert re.search(rf"bundled run {run_id} into .* signed by SHA256:", flat(made.stdout))
    return bundle, env


def members(bundle: Path) -> dict[str, bytes]:
    with tarfile.open(bundle, "r:gz") as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]


def repacked(bundle: Path, to: Path, edit: Callable[[dict[str, bytes]], None], *, sign_with: Ed25519PrivateKey | None = None) -> Path:
    """``bundle`` with its files edited; re-signed by ``sign_with`` when given (a signer who
    doctored their own run), else with the signature it had."""
    files, top = members(bundle), bundle.name.removesuffix(layout.SUFFIX)
    edit(files)
    if sign_with is not None:  # as a signer doctoring their own run would: its manifest sealed again, then signed
        manifest = json.loads(files["run/manifest.json"])
        manifest["files"] = {
            name[4:]: hashlib.sha256(data).hexdigest() for name, data in files.items() if name.startswith("run/") and name != "run/manifest.json"
        }
        manifest["seal"] = content_seal(manifest)
        files["run/manifest.json"] = json.dumps(manifest).encode()
        contents = json.loads(files[layout.CONTENTS])
        contents["files"] = {name: hashlib.sha256(data).hexdigest() for name, data in files.items() if name not in (layout.CONTENTS, layout.SIGNATURE)}
        contents["signer"] = fingerprint(sign_with.public_key())
        files[layout.CONTENTS] = listing = layout.canonical(contents)
        signature = {"algorithm": "ed25519", "fingerprint": contents["signer"], "public_key": public_text(sign_with.public_key())}
        files[layout.SIGNATURE] = layout.canonical({**signature, "signature": base64.b64encode(sign_with.sign(listing)).decode()})
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        for name, data in files.items():
            member = tarfile.TarInfo(f"{top}/{name}")
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    to.write_bytes(packed.getvalue())
    return to


def signer_of(env: dict[str, str]) -> Ed25519PrivateKey:
    text = Path(env["ARENA_SIGNING_KEY_FILE"]).read_text().strip()
    return Ed25519PrivateKey.from_private_bytes(base64.b64decode(text.split(":", 1)[1]))


def test_a_bundle_verifies_on_another_machine_with_nothing_else(bundled, tmp_path):
    """Checked in an empty folder, with another home and no key or store: the signature, every
    file, every workload's result recomputed from its records and the card rendered again."""
    bundle, env = bundled
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    copy = shutil.copy(bundle, elsewhere / bundle.name)
    bare = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")} | {"HOME": str(elsewhere), "XDG_CONFIG_HOME": str(elsewhere)}
    checked = arena("verify", bundle.name, cwd=elsewhere, env=bare)
    assert checked.returncode == 0, checked.stderr
    said = flat(checked.stdout)
    assert f"signature: Ed25519 by {fingerprint(signer_of(env).public_key())} (a key not in the trusted-keys file)" in said
    assert re.search(r"files: \d+ match their signed SHA-256, none added or missing", said)
    assert "every workload's result and the card recomputed from the request records" in said
    assert said.endswith("figures recomputed from records")
    assert sorted(p.name for p in elsewhere.iterdir()) == [Path(copy).name]  # nothing left behind, no store made
    # what the bundle holds: the run, its card and environment; the key never
    files = members(bundle)
    assert {"card.json", "environment.json", "contents.json", "signature.json", "run/manifest.json"} <= set(files)
    assert any(name.endswith("monday-peak/records.jsonl") for name in files) and any(name.endswith("chat/records.jsonl") for name in files)
    environment = json.loads(files["environment.json"])
    assert environment["arena_version"] and environment["hardware"] and environment["workload_commands"]["chat"].startswith("llama-benchy")
    assert "unknown" in environment["weights"]  # an attached rig: its weights are not on this machine, and it says so
    key_line = Path(env["ARENA_SIGNING_KEY_FILE"]).read_text().strip()
    assert all(key_line.encode() not in data and key_line.split(":", 1)[1].encode() not in data for data in files.values())


def _edit_json(name: str, change: Callable[[dict], None]) -> Callable[[dict[str, bytes]], None]:
    def edit(files: dict[str, bytes]) -> None:
        value = json.loads(files[name])
        change(value)
        files[name] = json.dumps(value).encode()

    return edit


def _result(name: str) -> str:
    return f"run/workloads/{name}/result.json"


def _faster(result: dict) -> None:
    result["tokens_per_second"] *= 1.2


def _card_faster(card: dict) -> None:
    card["card"]["workloads"][0]["tokens_per_second"] *= 1.2


def _a_record_edited(files: dict[str, bytes]) -> None:
    name = "run/workloads/chat/records.jsonl"
    first, rest = files[name].split(b"\n", 1)
    record = json.loads(first)
    record["end_ns"] += 1_000_000
    files[name] = json.dumps(record).encode() + b"\n" + rest


TAMPERS = {
    "a record edited": (_a_record_edited, None, r"run/workloads/chat/records\.jsonl was changed \(its SHA-256 is not the signed one\)"),
    "a card figure edited": (_edit_json("card.json", _card_faster), None, r"card\.json was changed"),
    "a file added": (lambda files: files.update({"run/extra.txt": b"more"}), None, r"run/extra\.txt was added \(the signed contents do not list it\)"),
    "a file removed": (lambda files: files.pop("environment.json"), None, r"environment\.json is missing \(the signed contents list it\)"),
    "a result edited and signed again by its signer": (
        _edit_json(_result("chat"), _faster),
        "signer",
        r"chat's tokens_per_second: its result says [\d.]+, its records give [\d.]+",
    ),
    "the card edited and signed again by its signer": (
        _edit_json("card.json", _card_faster),
        "signer",
        r"the card's card\.workloads\[0\]\.tokens_per_second: the card says [\d.]+, its records give [\d.]+",
    ),
    "an open-loop record edited and signed again": (
        lambda files: files.update({"run/workloads/monday-peak/records.jsonl": b"\n".join(files["run/workloads/monday-peak/records.jsonl"].split(b"\n")[1:])}),
        "signer",
        r"monday-peak's .*: its result says .*, its records give",
    ),
}


@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_each_tamper_is_refused_in_one_line_naming_what(bundled, tmp_path, tamper):
    bundle, env = bundled
    edit, sign, reason = TAMPERS[tamper]
    doctored = repacked(bundle, tmp_path / bundle.name, edit, sign_with=signer_of(env) if sign else None)
    checked = arena("verify", str(doctored))
    assert checked.returncode != 0
    (line,) = checked.stderr.strip().splitlines()
    assert re.search(reason, line), line
    assert line.startswith("arena: error: bundle ") and "Traceback" not in checked.stderr


def test_a_signature_not_made_by_the_key_it_names_is_refused(bundled, tmp_path):
    bundle, _ = bundled
    other = Ed25519PrivateKey.generate()

    def forged(files: dict[str, bytes]) -> None:  # the signer's name kept, another key's signature
        signature = json.loads(files[layout.SIGNATURE])
        signature["signature"] = base64.b64encode(other.sign(files[layout.CONTENTS])).decode()
        files[layout.SIGNATURE] = layout.canonical(signature)

    checked = arena("verify", str(repacked(bundle, tmp_path / bundle.name, forged)))
    assert checked.returncode != 0 and "the signature does not hold: not made over these contents by the key it names" in checked.stderr


def test_a_truncated_an_oversized_and_a_hostile_archive_are_refused(bundled, tmp_path, monkeypatch):
    bundle, _ = bundled
    cut = tmp_path / "cut.arena-bundle"
    cut.write_bytes(bundle.read_bytes()[: bundle.stat().st_size // 2])
    said = arena("verify", str(cut))
    assert said.returncode != 0 and re.search(r"bundle cut\.arena-bundle cannot be unpacked \(\w+Error", said.stderr), said.stderr
    monkeypatch.setattr(layout, "MOST_BYTES", bundle.stat().st_size - 1)
    said = arena("verify", str(bundle))
    assert said.returncode != 0 and re.search(r"is [\d,]+ bytes: over the [\d,]+ byte limit, not opened", said.stderr), said.stderr
    monkeypatch.undo()
    for name, member, reason in (
        ("escape", tarfile.TarInfo("run/../../outside.txt"), "a path outside its folder"),
        ("link", tarfile.TarInfo("run/link"), "a link: only plain files and folders are unpacked"),
    ):
        if name == "link":
            member.type, member.linkname = tarfile.SYMTYPE, "/etc/passwd"
        packed = io.BytesIO()
        with tarfile.open(fileobj=packed, mode="w:gz") as tar:
            for inner, data in members(bundle).items():
                info = tarfile.TarInfo(f"run/{inner}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            tar.addfile(member, io.BytesIO(b""))
        hostile = tmp_path / f"{name}.arena-bundle"
        hostile.write_bytes(packed.getvalue())
        said = arena("verify", str(hostile))
        assert said.returncode != 0 and reason in said.stderr, said.stderr
    assert not (tmp_path.parent / "outside.txt").exists()


def test_a_bundle_made_by_another_version_says_what_it_cannot_recompute(bundled, tmp_path):
    bundle, env = bundled

    def older(files: dict[str, bytes]) -> None:
        contents = json.loads(files[layout.CONTENTS])
        contents["made_by"] = "0.0.9"
        files[layout.CONTENTS] = layout.canonical(contents)
        _edit_json(_result("chat"), _faster)(files)  # figures this version computes otherwise

    checked = arena("verify", str(repacked(bundle, tmp_path / bundle.name, older, sign_with=signer_of(env))))
    assert checked.returncode == 0, checked.stderr
    assert re.search(r"made by Arena 0\.0\.9; Arena [\d.]+ cannot recompute \d+ figures, first chat's tokens_per_second", flat(checked.stdout)), checked.stdout
    assert flat(checked.stdout).endswith("figures not recomputed (made by Arena 0.0.9)")


def test_a_result_of_arenas_own_instrument_must_recompute_one_of_the_tools_is_said(bundled, hooks, tmp_path):
    """A result Arena's own instrument measured keeps what recomputing needs: a session that says
    otherwise is refused. A result the reference tool computed itself has no records of Arena's
    to recompute it from: the bundle verifies, says which workload was not, and its mark says so."""
    bundle, env = bundled
    said_external = _edit_json("run/workloads/chat/session.json", lambda session: session.update(instrument="external"))
    checked = arena("verify", str(repacked(bundle, tmp_path / "native.arena-bundle", said_external, sign_with=signer_of(env))))
    assert checked.returncode != 0
    assert "chat: measured by Arena's own instrument, but its result cannot be recomputed (chat: measured by the reference tool itself" in checked.stderr

    def tool_made(files: dict[str, bytes]) -> None:  # as the external instrument stores it, and its card made again
        said_external(files)
        _edit_json(_result("chat"), lambda result: result.update(instrument="external"))(files)
        unpacked = tmp_path / "unpacked"
        for name, data in files.items():
            (unpacked / name).parent.mkdir(parents=True, exist_ok=True)
            (unpacked / name).write_bytes(data)
        files["card.json"] = standalone_card(unpacked / "run", hooks).encode()

    checked = arena("verify", str(repacked(bundle, tmp_path / bundle.name, tool_made, sign_with=signer_of(env))))
    assert checked.returncode == 0, checked.stderr
    assert "not recomputed: chat: measured by the reference tool itself" in flat(checked.stdout)
    assert flat(checked.stdout).endswith("figures recomputed from records, but for chat (not recomputable)")


def test_what_a_signer_could_craft_is_refused_in_one_line(bundled, tmp_path):
    """A workload named by a path (its folder would be read from anywhere), numbers a recompute
    cannot take, a bundle without its card: each refused in one line, no traceback."""
    bundle, env = bundled
    session = "run/workloads/monday-peak/session.json"
    crafts = {
        "a workload named by a path": (
            _edit_json("run/manifest.json", lambda manifest: manifest.update(workloads=["chat", "/tmp/elsewhere"])),
            "not an Arena manifest ($: 'workloads' must match regex",
        ),
        "an infinite count": (
            lambda files: files.update({session: files[session].replace(b'"dispatched": ', b'"dispatched": 1e999, "was": ')}),
            "monday-peak: measured by Arena's own instrument, but its result cannot be recomputed",
        ),
        "no card": (lambda files: files.pop("card.json"), "the signed contents do not list card.json"),
    }
    for name, (edit, reason) in crafts.items():
        checked = arena("verify", str(repacked(bundle, tmp_path / bundle.name, edit, sign_with=signer_of(env))))
        assert checked.returncode != 0 and reason in checked.stderr and len(checked.stderr.strip().splitlines()) == 1, (name, checked.stderr)


def test_a_huge_header_is_refused_before_it_is_read(tmp_path):
    """A pax header of 64 MiB in a file of a few kilobytes: tarfile would read it whole into memory."""
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("20261207-000000-abcd/run/x")
        info.pax_headers = {"comment": "x" * (64 << 20)}
        tar.addfile(info, io.BytesIO(b""))
    bomb = tmp_path / "bomb.arena-bundle"
    bomb.write_bytes(packed.getvalue())
    assert bomb.stat().st_size < 1 << 20
    said = arena("verify", str(bomb))
    assert said.returncode != 0 and re.search(r"holds a header of [\d,]+ bytes \(a name or attributes over 1,048,576\): not unpacked", said.stderr), said.stderr


def test_imported_bundles_show_their_signer_and_the_verified_mark_on_the_site(measured, bundled, tmp_path):
    """Two bundles of two signers (one trusted, by name), imported from a folder: one row each,
    the same bundle again is the same row, an untrusted key refused when the site says so."""
    store, run_id = measured
    bundle, env = bundled
    folder = tmp_path / "incoming"
    folder.mkdir()
    shutil.copy(bundle, folder)
    second_env = keyed(tmp_path, "second-key")
    other_store = tmp_path / "other-store"
    shutil.copytree(store, other_store)
    renamed = "20261207-000000-b0b0"  # the same measurement, stored as a run of its own elsewhere
    manifest = json.loads((other_store / run_id / "manifest.json").read_text())
    (other_store / run_id).rename(other_store / renamed)
    manifest["run_id"] = renamed
    manifest["seal"] = content_seal(manifest)
    (other_store / renamed / "manifest.json").write_text(json.dumps(manifest))
    made = arena("bundle", renamed, "--output", str(other_store), "--to", str(folder), env=second_env)
    assert made.returncode == 0, made.stderr
    trusted = tmp_path / "trusted-keys"
    trusted.write_text(f"# the site's keys\n{fingerprint(signer_of(env).public_key())} Jane's lab <b>\n")
    site_store = tmp_path / "site-store"
    imported = arena("import", str(folder), "--trusted-keys", str(trusted), "--output", str(site_store))
    assert imported.returncode == 0, imported.stderr
    assert f"imported as run {run_id}, signed by Jane's lab <b>, figures recomputed from records" in flat(imported.stdout)
    assert re.search(rf"imported as run {renamed}, signed by untrusted key SHA256:\S+, figures recomputed from records", flat(imported.stdout))
    again = arena("import", str(bundle), "--trusted-keys", str(trusted), "--output", str(site_store))
    assert again.returncode == 0 and f"already in the store: run {run_id}" in flat(again.stdout)
    clash = tmp_path / "clash"
    clash.mkdir()  # another run of an id the store holds, first in the folder: refused, and the next still imported
    repacked(
        bundle,
        clash / "a.arena-bundle",
        _edit_json("run/manifest.json", lambda manifest: manifest.update(config_source="measured-elsewhere.toml")),
        sign_with=signer_of(env),
    )
    shutil.copy(folder / f"{renamed}{layout.SUFFIX}", clash / "b.arena-bundle")
    both = arena("import", str(clash), "--output", str(site_store))
    assert both.returncode == 1 and "holds another run of that id; not adopted" in both.stderr and "1 of 2 bundles refused" in both.stderr
    assert f"already in the store: run {renamed}" in flat(both.stdout)
    refused = arena(
        "import", str(folder / f"{renamed}{layout.SUFFIX}"), "--trusted-keys", str(trusted), "--untrusted", "refuse", "--output", str(tmp_path / "strict")
    )
    assert refused.returncode != 0 and "a key the trusted-keys file does not name; refused" in refused.stderr
    config = tmp_path / "arena.toml"  # the same, as the store's maintainer configures it once
    config.write_text(f'[bundles]\ntrusted_keys = "{trusted}"\nuntrusted = "refuse"\n')
    configured = arena("--config", str(config), "import", str(folder / f"{renamed}{layout.SUFFIX}"), "--output", str(tmp_path / "strict"))
    assert configured.returncode != 0 and "a key the trusted-keys file does not name; refused" in configured.stderr
    assert arena("verify", run_id, "--output", str(site_store)).returncode == 0  # the imported run's own seal still holds
    board = json.loads(arena("leaderboard", "--json", "--include-scaled", "--output", str(site_store)).stdout)
    labels = {row["run_id"]: " ".join(row["labels"]) for row in board}
    assert "signed by Jane's lab <b> (SHA256:" in labels[run_id] and "signed by an untrusted key" in labels[renamed]
    site = tmp_path / "site"
    published = arena("publish", str(site), "--output", str(site_store))
    assert published.returncode == 0, published.stderr
    page = (site / "index.html").read_text()
    assert "verified: signed by Jane&#39;s lab &lt;b&gt; (SHA256:" in page and "<b>" not in page.split("Jane")[1][:20]
    assert "verified: signed by an untrusted key SHA256:" in page
    assert page.count("figures recomputed from records") >= 2


def test_exports_are_read_back_by_import_to_the_same_figures(measured, tmp_path):
    store, run_id = measured
    exported = arena("export", run_id, "--output", str(store), "--to", str(tmp_path / "out"))
    assert exported.returncode == 0, exported.stderr
    original = json.loads(arena("card", run_id, "--format", "json", "--output", str(store)).stdout)["card"]["workloads"]
    for workload in ("chat", "monday-peak"):
        (path,) = (tmp_path / "out").glob(f"{run_id}-{workload}.*.json")
        command = re.search(rf"{workload}: \S+\n  arena (import .*)", exported.stdout).group(1).split()
        back = arena(*command, "--output", str(tmp_path / "back"))  # the command the export printed
        assert back.returncode == 0, back.stderr
        new_id = re.search(r"imported as run (\S+)", back.stdout).group(1)
        (line,) = json.loads(arena("card", new_id, "--format", "json", "--output", str(tmp_path / "back")).stdout)["card"]["workloads"]
        (mine,) = [w for w in original if w["name"] == workload]
        assert line["tokens_per_second"] == pytest.approx(mine["tokens_per_second"], rel=1e-9)
        assert line["ttft_p50_s"] == pytest.approx(mine["ttft_p50_s"], rel=1e-9)


def test_a_key_is_kept_as_an_api_key_is(tmp_path):
    env = keyed(tmp_path)
    path = Path(env["ARENA_SIGNING_KEY_FILE"])
    assert path.stat().st_mode & 0o777 == 0o600
    again = arena("keys", "new", env=env)
    assert again.returncode != 0 and "already exists; not overwritten" in again.stderr
    shown = arena("keys", "show", env=env)
    assert shown.returncode == 0 and path.read_text().split(":", 1)[1].strip() not in shown.stdout + shown.stderr
    path.write_text("not-a-key\n")
    said = arena("keys", "show", env=env)
    assert said.returncode != 0 and f"{path}: not an Arena signing key" in said.stderr
    missing = arena("bundle", "20261207-000000-abcd", env={**env, "ARENA_SIGNING_KEY_FILE": str(tmp_path / "none")})
    assert missing.returncode != 0 and "no signing key: " in missing.stderr and "arena keys new" in missing.stderr
