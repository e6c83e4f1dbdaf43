"""Signing keys: Ed25519, from the ``cryptography`` library.

A private key is one line of text, ``arena-ed25519-private:`` and its 32 bytes in base64, kept
as an API key is: in a file of its own (``arena keys new`` writes it readable by its owner
alone) or in the environment variable :data:`KEY_VARIABLE`; read by the one secret reader
(:func:`arena_core.read_secret`), which remembers it so that nothing Arena writes or prints can
hold it. A key is named by its fingerprint: ``SHA256:`` and the base64 of the SHA-256 of its
public key (as OpenSSH names keys).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

import arena_core as arena

PRIVATE_PREFIX = "arena-ed25519-private:"
KEY_VARIABLE = "ARENA_SIGNING_KEY"
KEY_FILE_VARIABLE = "ARENA_SIGNING_KEY_FILE"
_RAW = serialization.Encoding.Raw


def default_key_file() -> Path:
    """``$ARENA_SIGNING_KEY_FILE``, else ``signing-key`` in Arena's folder of the user's config."""
    if named := os.environ.get(KEY_FILE_VARIABLE):
        return Path(named).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "arena" / "signing-key"


def fingerprint(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(_RAW, serialization.PublicFormat.Raw)
    return "SHA256:" + base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")


def public_text(public: Ed25519PublicKey) -> str:
    return base64.b64encode(public.public_bytes(_RAW, serialization.PublicFormat.Raw)).decode()


def public_key(text: str, where: str) -> Ed25519PublicKey:
    """The public key written as :func:`public_text` writes it; a one-line error naming ``where``."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
        if len(raw) != 32:
            raise ValueError
        return Ed25519PublicKey.from_public_bytes(raw)
    except (ValueError, binascii.Error, UnicodeEncodeError):
        raise arena.UsageError(f"{where}: not an Ed25519 public key (32 bytes in base64)") from None


def new_key(path: Path) -> Ed25519PrivateKey:
    """A new key written to ``path`` (readable by its owner alone); an existing file is never
    overwritten: a key lost is every bundle it signed left without its signer."""
    key = Ed25519PrivateKey.generate()
    raw = key.private_bytes(_RAW, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise arena.UsageError(f"arena keys new: {path} already exists; not overwritten (give --key-file for another)") from None
    except OSError as exc:
        raise arena.UsageError(f"arena keys new: cannot write {path}: {exc.strerror or exc}") from None
    with os.fdopen(handle, "w", encoding="ascii") as out:
        out.write(PRIVATE_PREFIX + base64.b64encode(raw).decode() + "\n")
    return key


def load_key(key_file: Path | None) -> Ed25519PrivateKey:
    """The signing key: from :data:`KEY_VARIABLE` when set, else ``key_file`` (default
    :func:`default_key_file`); a one-line error naming where it looked, never the key."""
    from_environment = bool(os.environ.get(KEY_VARIABLE))
    path = key_file or default_key_file()
    if not from_environment and not path.exists():
        raise arena.UsageError(f"no signing key: {path} does not exist (make one with arena keys new, or set {KEY_VARIABLE})")
    text = arena.read_secret(
        env=KEY_VARIABLE if from_environment else None,
        file=None if from_environment else path,
        env_flag=KEY_VARIABLE,
        file_flag="--key-file",
        what="signing key",
    )
    where = KEY_VARIABLE if from_environment else str(path)
    if text is None or not text.startswith(PRIVATE_PREFIX):
        raise arena.UsageError(f"{where}: not an Arena signing key (a line starting {PRIVATE_PREFIX})")
    arena.remember_secret(text[len(PRIVATE_PREFIX) :])  # the key without its prefix is as secret
    try:
        raw = base64.b64decode(text[len(PRIVATE_PREFIX) :].encode("ascii"), validate=True)
    except (ValueError, binascii.Error):
        raw = b""
    if len(raw) != 32:
        raise arena.UsageError(f"{where}: the signing key is not 32 bytes in base64")
    return Ed25519PrivateKey.from_private_bytes(raw)


def signature_holds(public: Ed25519PublicKey, signature: bytes, message: bytes) -> bool:
    try:
        public.verify(signature, message)
    except InvalidSignature:
        return False
    return True
