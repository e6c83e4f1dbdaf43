"""``arena verify BUNDLE`` and ``arena import BUNDLE``: a bundle checked offline, with nothing
but itself. In order, each refusal one line naming what failed:

1. its size, then the one door every archive passes (:func:`arena_core.unpack_folder`: no
   member outside the folder, no link, device or FIFO, bounded sizes and counts);
2. the signature: Ed25519 over ``contents.json``, by the public key it names (and, when the site
   refuses untrusted keys, a key its trusted-keys file names);
3. every file against the signed contents: none changed, missing or added;
4. every workload's result recomputed from its request records by its runner's own code
   (:attr:`arena_core.RunnerSpec.recompute`), and the card rendered again from the bundle's
   files and compared with the one it carries -- a disagreement names the figure and both values.

The run's own seal (its manifest's hashes) is checked as ``arena verify RUN`` checks it in a
store. A bundle made by another Arena version is checked through step 3; where step 4
disagrees, it says what this version cannot recompute instead of refusing.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import arena_core as arena
from arena_bundles import layout
from arena_bundles.keys import fingerprint, public_key, signature_holds
from arena_bundles.trust import trusted_keys

RECOMPUTED = "figures recomputed from records"
#: Figures compared to this relative difference: the same code on the same records gives the same bits.
SAME = 1e-9


def open_bundle(request: arena.BundleRequest) -> arena.OpenedBundle:
    """The bundle at ``request.path`` unpacked into ``request.into`` once every check passes;
    :class:`arena_core.UsageError` naming the first that does not."""
    path, what = request.path, f"bundle {request.path.name}"
    try:
        size = path.stat().st_size
        if size > layout.MOST_BYTES:
            raise arena.UsageError(f"{what} is {size:,} bytes: over the {layout.MOST_BYTES:,} byte limit, not opened")
        packed = arena.read_file_bytes(path, max_bytes=layout.MOST_BYTES)
    except (OSError, ValueError) as exc:  # a link, a file that grew past the limit while read
        raise arena.UsageError(f"{what} cannot be read ({str(exc)[:120]})") from None
    folder = arena.unpack_folder(packed, request.into, what=what, most_bytes=layout.MOST_BYTES)
    listing, contents = _read(folder / layout.CONTENTS, what)
    signer = _signed_by(contents, _read(folder / layout.SIGNATURE, what)[1], listing, what)
    names = trusted_keys(request.trusted_keys)
    if request.refuse_untrusted and signer not in names:
        raise arena.UsageError(f"{what}: signed by {signer}, a key the trusted-keys file does not name; refused")
    checked = [f"signature: Ed25519 by {signer}" + (f" ({names[signer]})" if signer in names else " (a key not in the trusted-keys file)")]
    checked.append(_files_match(folder, contents, what))
    run_dir = folder / layout.RUN
    manifest = arena.read_manifest(run_dir)
    if manifest.run_id != contents.get("run_id") or folder.name != manifest.run_id:
        raise arena.UsageError(f"{what}: its run is {manifest.run_id!r} but it is packed as {folder.name!r}; refused")
    sealed, problems = arena.verify_run(run_dir)
    if not sealed or problems:  # the run's own manifest seal and hashes, as arena verify RUN checks them in a store
        raise arena.UsageError(f"{what}: its run's own seal does not hold: {problems[0]}")
    made_by = str(contents.get("made_by", "unknown"))[:40]
    figures, lines = _figures(request, run_dir, folder, made_by, what)
    provenance = arena.Provenance(
        signer=signer, signer_name=names.get(signer), figures=figures, made_by=made_by, contents_sha256=hashlib.sha256(listing).hexdigest()
    )
    return arena.OpenedBundle(run_id=manifest.run_id, run_dir=run_dir, provenance=provenance, checked=(*checked, *lines))


def _read(path: Path, what: str) -> tuple[bytes, Any]:
    """A bundle's own JSON file: its bytes and its value, read as outside data (bounded in size and depth)."""
    try:
        data = arena.read_file_bytes(path, max_bytes=layout.MOST_LISTING_BYTES)
        return data, arena.parse_json(data.decode("utf-8"), max_bytes=layout.MOST_LISTING_BYTES)
    except FileNotFoundError:
        raise arena.UsageError(f"{what}: holds no {path.name}; not a signed bundle") from None
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and a JSON too deep are ValueErrors
        raise arena.UsageError(f"{what}: {path.name} cannot be read ({str(exc)[:120]})") from None


def _signed_by(contents: Any, signature: Any, listing: bytes, what: str) -> str:
    """The signer's fingerprint, once the signature over the listing holds for the key it names."""
    if not isinstance(contents, dict) or contents.get("format") != layout.FORMAT or not isinstance(contents.get("files"), dict):
        raise arena.UsageError(f"{what}: {layout.CONTENTS} is not an {layout.FORMAT} listing")
    if not isinstance(signature, dict) or signature.get("algorithm") != "ed25519":
        raise arena.UsageError(f"{what}: {layout.SIGNATURE} is not an Ed25519 signature")
    public = public_key(str(signature.get("public_key", "")), f"{what}: {layout.SIGNATURE}")
    try:
        signed = base64.b64decode(str(signature.get("signature", "")).encode("ascii"), validate=True)
    except (ValueError, binascii.Error):
        signed = b""
    signer = fingerprint(public)
    if not signature_holds(public, signed, listing):
        raise arena.UsageError(f"{what}: the signature does not hold: not made over these contents by the key it names ({signer})")
    if contents.get("signer") != signer or signature.get("fingerprint") != signer:
        raise arena.UsageError(f"{what}: signed by {signer}, but its contents name {str(contents.get('signer'))[:60]!r} as signer; refused")
    return signer


def _files_match(folder: Path, contents: dict[str, Any], what: str) -> str:
    listed: dict[str, Any] = contents["files"]
    if missing := [name for name in layout.REQUIRED if name not in listed]:
        raise arena.UsageError(f"{what}: the signed contents do not list {missing[0]}, which every bundle holds")
    present = {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}
    for name in (layout.CONTENTS, layout.SIGNATURE):
        present.pop(name, None)
    for name in sorted(listed):
        if name not in present:
            raise arena.UsageError(f"{what}: {name[:200]} is missing (the signed contents list it)")
        if arena.sha256_of(present[name]) != listed[name]:
            raise arena.UsageError(f"{what}: {name[:200]} was changed (its SHA-256 is not the signed one)")
    if added := sorted(set(present) - set(listed)):
        raise arena.UsageError(f"{what}: {added[0][:200]} was added (the signed contents do not list it)")
    return f"files: {len(listed)} match their signed SHA-256, none added or missing"


def _figures(request: arena.BundleRequest, run_dir: Path, folder: Path, made_by: str, what: str) -> tuple[str, list[str]]:
    """What the provenance says of the figures, and a line per check. A disagreement refuses the
    bundle (made by another version, it is said as what this version cannot recompute); a
    workload its runner cannot recompute (the reference tool's own result, say) is said, not refused."""
    skipped: dict[str, str] = {}
    disagreements = list(_result_disagreements(request.registry, run_dir, skipped))
    carried = _read(folder / layout.CARD, what)[1]
    rendered = json.loads(request.card_of(run_dir))
    disagreements += [
        f"the card's {where}: the card says {_shown(said)}, its records give {_shown(made)}" for where, said, made in _differences(carried, rendered)
    ]
    if disagreements and made_by == arena.__version__:
        raise arena.UsageError(f"{what}: {disagreements[0]}")
    if disagreements:
        note = f"made by Arena {made_by}; Arena {arena.__version__} cannot recompute {len(disagreements)} figures, first {disagreements[0]}"
        return f"figures not recomputed (made by Arena {made_by})", [note]
    lines = [f"figures: every workload's result and the card recomputed from the request records by Arena {arena.__version__}"]
    if not skipped:
        return RECOMPUTED, lines
    lines = [f"figures: the card and every other workload's result recomputed from the request records by Arena {arena.__version__}"]
    return f"{RECOMPUTED}, but for {', '.join(skipped)} (not recomputable)", [*lines, *(f"not recomputed: {why}" for why in skipped.values())]


def _result_disagreements(registry: arena.Registry, run_dir: Path, skipped: dict[str, str]) -> Iterator[str]:
    """Each figure where a workload's result and its recomputation differ; the workloads that
    cannot be recomputed go to ``skipped``, with why."""
    manifest = arena.read_manifest(run_dir)
    for name in manifest.workloads:
        stored = arena.load_result(run_dir, name)
        if stored is None:
            continue
        runner = registry.runners.get(stored.runner)
        recompute = runner.item.recompute if runner is not None else None
        if recompute is None:
            skipped[name] = f"{name}: its runner {stored.runner!r} cannot recompute its result here"
            continue
        try:
            again = recompute(arena.workload_dir(run_dir, name)).scaled(stored.scale).customised(stored.custom)
        except Exception as exc:  # outside data of any shape; a runner's clear error (UsageError) or any other
            why = str(exc) if isinstance(exc, arena.UsageError) else f"{type(exc).__name__}: {str(exc)[:120]}"
            if stored.instrument == "native":  # Arena's own instrument keeps what recomputing needs: one that cannot is refused
                yield f"{name}: measured by Arena's own instrument, but its result cannot be recomputed ({why})"
            else:
                skipped[name] = why  # the reference tool's own result, or an imported one
            continue
        yield from (
            f"{name}'s {where}: its result says {_shown(said)}, its records give {_shown(made)}" for where, said, made in _result_differences(stored, again)
        )


def _result_differences(stored: arena.WorkloadResult, again: arena.WorkloadResult) -> Iterator[tuple[str, Any, Any]]:
    """Where a stored result and its recomputation differ. The run adds to a result what its
    records do not hold -- the server's /metrics figures, the decode ceiling of the hardware,
    an invalid verdict for a decode above it -- so a figure the recomputation lacks, and a
    reason or label it lacks, are not differences; one it has that the result lacks is."""
    said, made = arena.CONVERTER.unstructure(stored), arena.CONVERTER.unstructure(again)
    verdict_said, verdict_made = said.pop("verdict"), made.pop("verdict")
    for where, before, after in _differences(said, made):
        if not (after is None and where.startswith("metrics.")):
            yield where, before, after
    for part in ("reasons", "labels"):
        for text in verdict_made[part]:
            if text not in verdict_said[part]:
                yield f"verdict.{part}", verdict_said[part], text
    if verdict_said["valid"] and not verdict_made["valid"]:
        yield "verdict.valid", True, False


def _differences(said: Any, made: Any, where: str = "") -> Iterator[tuple[str, Any, Any]]:
    """Each leaf where two JSON values differ, by its path (numbers by relative difference)."""
    if isinstance(said, dict) and isinstance(made, dict):
        for key in sorted(set(said) | set(made), key=str):
            yield from _differences(said.get(key), made.get(key), f"{where}.{key}" if where else str(key))
    elif isinstance(said, list) and isinstance(made, list) and len(said) == len(made):
        for index, (a, b) in enumerate(zip(said, made)):
            yield from _differences(a, b, f"{where}[{index}]")
    elif _numbers(said, made):
        if abs(said - made) > SAME * max(abs(said), abs(made)):
            yield where, said, made
    elif said != made:
        yield where, said, made


def _numbers(*values: Any) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _shown(value: Any) -> str:
    return repr(value)[:80]
