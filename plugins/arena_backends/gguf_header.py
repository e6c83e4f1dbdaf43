"""What a GGUF file says of its model: ``general.name``, architecture, quantisation, size label.

Only the header's key-value section is read, front to back, and only until the wanted keys are
found: the tokenizer's arrays that follow can hold hundreds of thousands of strings. A file is
outside data like any other: every count and length is bounded, and a file that is not GGUF,
or is damaged, gives an empty answer, never an exception.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import IO, Any

WANTED = ("general.name", "general.architecture", "general.file_type", "general.size_label", "general.basename", "general.finetune")
MAX_KEYS = 100_000
MAX_STRING_BYTES = 1 << 20
#: How far into a file the reader goes before it gives up on the keys it has not met.
MAX_HEADER_BYTES = 64 << 20
#: llama.cpp's ``llama_ftype`` (its ``general.file_type``), by number.
FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M",
    13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS",
    21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S",
    29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}  # fmt: skip
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9


class _Damaged(Exception):
    pass


def gguf_metadata(path: Path) -> dict[str, Any]:
    """The :data:`WANTED` keys a GGUF file holds (``{}`` for anything that is not a readable
    GGUF file), with ``quantisation`` from ``general.file_type`` and ``file_bytes``."""
    try:
        with open(path, "rb") as handle:
            if handle.read(4) != b"GGUF":
                return {}
            version, _tensors, keys = struct.unpack("<IQQ", _exactly(handle, 20))
            if version < 2 or keys > MAX_KEYS:
                return {}
            found = _wanted_keys(handle, keys)
            size = path.stat().st_size
    except (OSError, struct.error, _Damaged, UnicodeDecodeError):
        return {}
    file_type = found.get("general.file_type")
    if isinstance(file_type, int):
        found["quantisation"] = FILE_TYPES.get(file_type, f"file type {file_type}")
    return {**found, "file_bytes": size}


def _wanted_keys(handle: IO[bytes], keys: int) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for _ in range(keys):
        if handle.tell() > MAX_HEADER_BYTES or len(found) == len(WANTED):
            break
        key = _string(handle)
        kind = _unpack(handle, "<I")
        value = _value(handle, kind, keep=key in WANTED)
        if key in WANTED and isinstance(value, (str, int, float)):
            found[key] = value
    return found


def _value(handle: IO[bytes], kind: int, *, keep: bool) -> Any:
    if kind in _SCALARS:
        return _unpack(handle, _SCALARS[kind])
    if kind == STRING:
        return _string(handle)
    if kind == ARRAY:
        item, count = _unpack(handle, "<I"), _unpack(handle, "<Q")
        if count > 1 << 24:
            raise _Damaged
        if item in _SCALARS:
            handle.seek(struct.calcsize(_SCALARS[item]) * count, 1)
        else:
            for _ in range(count):
                _value(handle, item, keep=False)
        return None
    raise _Damaged


def _string(handle: IO[bytes]) -> str:
    length = _unpack(handle, "<Q")
    if length > MAX_STRING_BYTES:
        raise _Damaged
    return _exactly(handle, length).decode("utf-8")


def _unpack(handle: IO[bytes], layout: str) -> Any:
    return struct.unpack(layout, _exactly(handle, struct.calcsize(layout)))[0]


def _exactly(handle: IO[bytes], count: int) -> bytes:
    data = handle.read(count)
    if len(data) != count:
        raise _Damaged
    return data
