"""Integrity of stored runs: the manifest records a SHA-256 of every results file when a run
ends (``files``); ``arena verify RUN`` recomputes them and names any file that changed,
disappeared or appeared since. A run imported from a signed bundle also keeps how it came
(``provenance.json``: who signed it, what was recomputed), which the leaderboard and the site show."""

from __future__ import annotations

import hashlib
from pathlib import Path

import attrs

from arena_core.converter import CONVERTER
from arena_core.files import read_json_file, write_json_atomic
from arena_core.run.manifest import MANIFEST, MAX_MANIFEST_BYTES, Manifest, content_seal, read_manifest
from arena_core.run.store import WRITER_LOCK
from arena_core.types import Provenance

#: How a run imported from a bundle came (:class:`~arena_core.types.Provenance`), written beside
#: its files when it is imported; not one of the run's sealed files.
PROVENANCE = "provenance.json"
_MAX_PROVENANCE_BYTES = 64 * 1024


#: Not sealed: the manifest itself (it holds the hashes, and seals itself), the writer's lock,
#: a bundle's provenance (written when imported), and temporary files of atomic writes.
def _sealed_files(run_dir: Path) -> list[Path]:
    unsealed = (run_dir / MANIFEST, run_dir / WRITER_LOCK, run_dir / PROVENANCE)
    return sorted(p for p in run_dir.rglob("*") if p.is_file() and p not in unsealed and not p.name.endswith(".tmp"))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_hashes(run_dir: Path) -> dict[str, str]:
    return {path.relative_to(run_dir).as_posix(): sha256_of(path) for path in _sealed_files(run_dir)}


def sealed(run_dir: Path, manifest: Manifest) -> Manifest:
    """``manifest`` with the hash of every results file now in ``run_dir``."""
    return attrs.evolve(manifest, files=file_hashes(run_dir))


def verify(run_dir: Path) -> tuple[int, list[str]]:
    """``(files checked, problems)``; no problems means every file is as the run left it."""
    recorded = read_manifest(run_dir).files
    if recorded is None:
        return 0, [f"{run_dir / MANIFEST}: no file hashes recorded (a run stored before Arena sealed runs, or still running)"]
    current = file_hashes(run_dir)
    stored = read_json_file(run_dir / MANIFEST, max_bytes=MAX_MANIFEST_BYTES)  # read_manifest above read it whole
    problems = [] if stored.get("seal") in (None, content_seal(stored)) else [f"{MANIFEST}: changed (its content no longer matches its seal)"]
    problems += [f"{name}: changed (SHA-256 differs)" for name, digest in recorded.items() if name in current and current[name] != digest]
    problems += [f"{name}: missing" for name in recorded if name not in current]
    problems += [f"{name}: not part of the run (added afterwards)" for name in current if name not in recorded]
    return len(recorded), problems


def write_provenance(run_dir: Path, provenance: Provenance) -> None:
    write_json_atomic(run_dir / PROVENANCE, CONVERTER.unstructure(provenance))


def read_provenance(run_dir: Path) -> Provenance | None:
    """How the run came from a bundle; None for a run measured or imported otherwise, or one
    whose provenance file is damaged (then it is shown as not signed)."""
    if not (run_dir / PROVENANCE).is_file():
        return None
    try:
        return CONVERTER.structure(read_json_file(run_dir / PROVENANCE, max_bytes=_MAX_PROVENANCE_BYTES), Provenance)
    except Exception:  # outside data of any shape: not a provenance
        return None


def integrity_label(run_dir: Path) -> str:
    """One phrase for a page: "verified" (with who signed it and what was recomputed, for a run
    from a bundle), "files changed since the run", or "not sealed"."""
    checked, problems = verify(run_dir)
    if not checked:
        return "not sealed (stored before Arena recorded file hashes)"
    if problems:
        return "files changed since the run"
    signed = signed_by(run_dir)
    return f"verified: {signed}" if signed else "verified"


def signed_by(run_dir: Path) -> str:
    """Who signed the bundle a run came in, and what was recomputed; "" for a run not from one."""
    provenance = read_provenance(run_dir)
    if provenance is None:
        return ""
    signer = f"{provenance.signer_name} ({provenance.signer[:15]}…)" if provenance.signer_name else f"an untrusted key {provenance.signer[:15]}…"
    return f"signed by {signer}; {provenance.figures}"
