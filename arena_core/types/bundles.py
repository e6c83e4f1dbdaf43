"""Values of the bundle hook (:func:`arena_core.hookspecs.arena_open_bundle`): a run that travels
as one signed file, asked to be checked, and what the check found."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from attrs import frozen

if TYPE_CHECKING:  # the registry's module imports these types
    from arena_core.registry import Registry


@frozen(kw_only=True)
class BundleRequest:
    """Open ``path`` into ``into`` (an empty folder the caller owns and removes) and check it.

    ``card_of(run_dir)`` is the card of a run folder by itself as Arena renders it (JSON): the
    card a bundle carries is checked against it. ``trusted_keys``: the maintainer's file naming
    the keys a site trusts (None: no key is trusted); ``refuse_untrusted``: a bundle signed by
    any other key is refused rather than marked."""

    path: Path
    into: Path
    registry: Registry
    card_of: Callable[[Path], str]
    trusted_keys: Path | None = None
    refuse_untrusted: bool = False


@frozen(kw_only=True)
class Provenance:
    """How a run came into the store from a bundle: ``RUN/provenance.json``, beside the run's own
    files (not sealed by its manifest: written when it is imported)."""

    #: the signing key's fingerprint (``SHA256:`` and 43 base64 characters)
    signer: str
    #: the name the trusted-keys file gives that key; None: a key not in it
    signer_name: str | None = None
    #: "figures recomputed from records", or what could not be recomputed and why
    figures: str
    #: the Arena version that made the bundle
    made_by: str
    #: the SHA-256 of the bundle's signed contents list
    contents_sha256: str


@frozen(kw_only=True)
class OpenedBundle:
    """A bundle that passed every check: its run, who signed it, what was checked (lines for the user)."""

    run_id: str
    #: the run's folder, unpacked inside the request's ``into`` (named as the bundle keeps it)
    run_dir: Path
    provenance: Provenance
    checked: tuple[str, ...] = ()
