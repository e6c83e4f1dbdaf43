"""A bundle's layout, written once for the packer and the checker.

A bundle is a gzipped tar of one folder named after its run::

    RUN_ID/
      run/...             the run folder as stored: manifest, request records, results
      card.json           the run's card by itself, as Arena renders it
      environment.json    engine, versions, hardware, the weights' and template's digests, commands
      contents.json       every file above with its SHA-256: what the signature covers
      signature.json      the Ed25519 signature of contents.json, with the public key
"""

from __future__ import annotations

import json
from typing import Any

FORMAT = "arena-bundle/1"
SUFFIX = ".arena-bundle"
RUN = "run"
CARD = "card.json"
ENVIRONMENT = "environment.json"
CONTENTS = "contents.json"
SIGNATURE = "signature.json"
#: The most bytes a bundle may hold, packed or unpacked: a run of 100,000 requests with their
#: chunk timings is a few hundred megabytes.
MOST_BYTES = 1 << 30
#: contents.json and signature.json: a line per file, a few hundred bytes.
MOST_LISTING_BYTES = 16 * 2**20
#: What every bundle's signed contents list (what the checks read).
REQUIRED = (f"{RUN}/manifest.json", CARD, ENVIRONMENT)
#: Files of a stored run that are not the run's: the writer's lock, an import's provenance.
NOT_CARRIED = (".writer", "provenance.json")


def canonical(value: Any) -> bytes:
    """The one way a bundle writes its JSON: sorted keys, so a listing signs the same bytes."""
    return json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False).encode("utf-8") + b"\n"
