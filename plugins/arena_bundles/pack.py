"""``arena bundle RUN``: a finished, sealed run packed with its card and environment into one
file, signed with the user's key (:mod:`arena_bundles.layout` says what is where)."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import arena_core as arena
from arena_bundles import layout
from arena_bundles.environment import environment
from arena_bundles.keys import fingerprint, public_text


def _run_files(run_dir: Path) -> dict[str, bytes]:
    """The run folder's files, under ``run/``; refused unless it is finished and sealed as it was left."""
    checked, problems = arena.verify_run(run_dir)
    if not checked:
        raise arena.UsageError(f"run {run_dir.name} cannot be bundled: {problems[0]}")
    if problems:
        raise arena.UsageError(f"run {run_dir.name} cannot be bundled: {problems[0]} (arena verify {run_dir.name} lists every change)")
    files = {}
    for path in sorted(run_dir.rglob("*")):
        if path.is_symlink() or not path.is_file() or path.name in layout.NOT_CARRIED or path.name.endswith(".tmp"):
            continue
        files[f"{layout.RUN}/{path.relative_to(run_dir).as_posix()}"] = path.read_bytes()
    return files


def _no_secret(files: dict[str, bytes]) -> None:
    """Every file is checked whole for a secret this process read (the signing key, an API key)."""
    for name, data in files.items():
        if arena.holds_secret(data.decode("utf-8", "replace")):
            raise arena.UsageError(f"run {name.split('/')[1] if name.startswith('run/') else name}: {name} holds a secret; not bundled")


def bundle_bytes(run_dir: Path, key: Ed25519PrivateKey, card_json: str) -> bytes:
    """The signed bundle of the run in ``run_dir``, ``card_json`` its card by itself."""
    files = _run_files(run_dir)
    manifest = arena.read_manifest(run_dir)
    files[layout.CARD] = card_json.encode("utf-8")
    files[layout.ENVIRONMENT] = layout.canonical(environment(manifest))
    _no_secret(files)
    signer = fingerprint(key.public_key())
    contents = {
        "format": layout.FORMAT,
        "run_id": manifest.run_id,
        "made_by": arena.__version__,
        "signer": signer,
        "files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())},
    }
    files[layout.CONTENTS] = listing = layout.canonical(contents)
    signature = {
        "algorithm": "ed25519",
        "fingerprint": signer,
        "public_key": public_text(key.public_key()),
        "signature": base64.b64encode(key.sign(listing)).decode(),
    }
    files[layout.SIGNATURE] = layout.canonical(signature)
    return _tar(manifest.run_id, files)


def _tar(top: str, files: dict[str, bytes]) -> bytes:
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        for name, data in files.items():
            member = tarfile.TarInfo(f"{top}/{name}")
            member.size, member.mode, member.mtime = len(data), 0o644, 0
            tar.addfile(member, io.BytesIO(data))
    return packed.getvalue()
