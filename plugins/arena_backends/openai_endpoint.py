"""The ``openai`` backend: attach to a server that is already running."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from arena_core import BackendRequest, Endpoint, UsageError, bounds, parse_json, read_api_key, read_bounded


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is not followed: the API key would go along to wherever it points."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)
#: A set-up read answers in seconds and kilobytes: past these the server trickles or floods.
SETUP_DEADLINE_S = 15.0
SETUP_MAX_BYTES = 4 * 2**20
#: The longest model id Arena takes from a server's list.
MAX_MODEL_ID = 512
#: The engines a server names itself as in ``/v1/models`` (each entry's ``owned_by``), and the
#: backend that declares how each schedules: what a prediction of an attached run simulates.
ENGINES_BY_OWNER = {"vllm": "vllm", "llamacpp": "llama-cpp"}


class ExistingEndpoint:
    def __init__(self, request: BackendRequest) -> None:
        section = request.endpoint
        if not section.base_url:
            raise UsageError("the openai backend needs a base URL (--base-url or [endpoint] base_url)")
        self.base_url = section.base_url.rstrip("/").removesuffix("/v1")
        self.model = section.model
        self.key = read_api_key(section)
        self.version = ""
        #: the engine that answered, as the server names itself (a backend's name; "" unknown)
        self.engine = ""
        self.slots: int | None = None

    def start(self) -> Endpoint:
        listing = self._get("/v1/models")
        entries = listing.get("data") if isinstance(listing.get("data"), list) else []
        # an id is text of a sane length, whatever else a server lists
        ids = [entry["id"] for entry in entries if isinstance(entry, dict) and isinstance(entry.get("id"), str) and 0 < len(entry["id"]) <= MAX_MODEL_ID]
        if self.model is None:
            if not ids:
                raise UsageError(f"{self.base_url}/v1/models lists no model; name one with --served-model")
            self.model = ids[0]
        owners = {owner for entry in entries if isinstance(entry, dict) and entry.get("id") == self.model and isinstance(owner := entry.get("owned_by"), str)}
        self.engine = ENGINES_BY_OWNER.get(owners.pop(), "") if len(owners) == 1 else ""  # only a name Arena knows, never the server's text
        if self.engine == "llama-cpp":
            self.slots = self._llama_cpp_slots()
        return Endpoint(base_url=self.base_url, model=self.model, api_key=self.key)

    def _llama_cpp_slots(self) -> int | None:
        """How many requests llama.cpp's server serves at once (``/props``' ``total_slots``, its
        ``--parallel``), where it says so with a count; None where it does not answer."""
        try:
            found = self._get("/props").get("total_slots")
        except UsageError:  # an older server, or /props turned off: the engine's default then
            return None
        return found if not bounds.CONCURRENCY.problem(found) else None  # a count a server could serve at once, or none

    def _get(self, path: str) -> dict:
        request = urllib.request.Request(self.base_url + path)
        if self.key:
            request.add_header("Authorization", f"Bearer {self.key}")
        try:
            with _OPENER.open(request, timeout=SETUP_DEADLINE_S) as answer:
                found = parse_json(read_bounded(answer, max_bytes=SETUP_MAX_BYTES, deadline_s=SETUP_DEADLINE_S) or b"{}", max_bytes=SETUP_MAX_BYTES)
            if not isinstance(found, dict):
                raise ValueError("not a JSON object")
            return found
        except urllib.error.HTTPError as exc:
            if exc.code == 401:
                raise UsageError(f"{self.base_url} rejected the API key (HTTP 401)") from None
            if 300 <= exc.code < 400:
                raise UsageError(
                    f"{self.base_url}{path} redirects elsewhere (HTTP {exc.code}); Arena does not follow redirects, which would carry the API key along: "
                    "give the final address as --base-url"
                ) from None
            raise UsageError(f"{self.base_url}{path}: HTTP {exc.code}") from None
        except ValueError as exc:  # too slow, too large, too deep, not JSON: a broken server, said in one line
            raise UsageError(f"{self.base_url}{path}: {exc}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise UsageError(f"--base-url {self.base_url} does not answer: {getattr(exc, 'reason', exc)}") from None

    def stop(self) -> None:
        """Nothing to stop: the server is not ours."""

    @property
    def log_path(self) -> Path | None:
        return None

    @property
    def facts(self) -> Mapping[str, object]:
        facts: dict[str, object] = {"backend": "openai", "base_url": self.base_url, "model": self.model}
        if self.engine:  # what a prediction of this run simulates (Registry.serving_backend)
            facts["engine"] = self.engine
        if self.slots is not None:
            facts["slots"] = self.slots
        return facts
