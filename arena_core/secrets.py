"""API keys: read from the environment or a file, checked on read, and never let out.

A key leaves Arena only in the ``Authorization`` header to the server it is for. Every key read
here is remembered for the life of the process (:mod:`arena_core.redaction`), and redacted from
whatever Arena stores or prints.
"""

from __future__ import annotations

import os
from pathlib import Path

from arena_core.errors import UsageError
from arena_core.files import unreadable
from arena_core.redaction import remember
from arena_core.types import EndpointSettings

#: A key Arena will send: visible ASCII without spaces, what a ``Bearer`` header can carry.
_KEY_CHARACTERS = frozenset(chr(code) for code in range(0x21, 0x7F))
_MAX_KEY_FILE_BYTES = 16 * 1024


def check_key(value: str, where: str) -> str:
    """``value`` stripped of surrounding whitespace, or a one-line error naming ``where`` -- never
    the key -- when it is empty, spans lines, or holds characters a header cannot carry."""
    key = value.strip()
    if not key:
        raise UsageError(f"{where}: the key is empty")
    if "\n" in key or "\r" in key:
        raise UsageError(f"{where}: the key spans more than one line; give a file with the key alone")
    if not set(key) <= _KEY_CHARACTERS:
        raise UsageError(f"{where}: the key holds characters an HTTP header cannot carry (a space, a control or a non-ASCII character)")
    remember(key)
    return key


def read_api_key(settings: EndpointSettings) -> str | None:
    """The key named by ``settings`` (an environment variable, else a file), checked, or None."""
    return read_secret(env=settings.api_key_env, file=settings.api_key_file, env_flag="--api-key-env", file_flag="--api-key-file", what="key")


def read_secret(*, env: str | None, file: str | Path | None, env_flag: str, file_flag: str, what: str = "key") -> str | None:
    """A secret from the environment variable ``env``, else the file ``file``, checked as an API
    key is (:func:`check_key`) and remembered for redaction; None when neither is named. Errors
    name the flag (``env_flag``, ``file_flag``) and the variable or file, never the secret."""
    if env:
        value = os.environ.get(env)
        if not value:
            raise UsageError(f"{env_flag}: the environment variable {env} is not set")
        return check_key(value, f"{env_flag} {env}")
    if file:
        path = Path(file).expanduser()
        if not path.exists():
            raise UsageError(f"{file_flag}: cannot read {path}: No such file or directory")
        if problem := unreadable(path, _MAX_KEY_FILE_BYTES):
            raise UsageError(f"{file_flag}: {path} is {problem}")
        try:
            with open(path, encoding="utf-8") as handle:
                value = handle.read(_MAX_KEY_FILE_BYTES + 1)
        except OSError as exc:
            raise UsageError(f"{file_flag}: cannot read {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise UsageError(f"{file_flag}: {path} is not text") from None
        if len(value) > _MAX_KEY_FILE_BYTES:
            raise UsageError(f"{file_flag}: {path} is larger than a {what} ({_MAX_KEY_FILE_BYTES} bytes at most)")
        return check_key(value, f"{file_flag} {path}")
    return None
