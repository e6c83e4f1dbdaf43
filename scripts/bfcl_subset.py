"""Write plugins/arena_quality/data/bfcl-simple-python.jsonl: every eighth item of the Berkeley
Function Calling Leaderboard's ``simple_python`` category (50 of 400), each question with its
function and its possible answers, read from the ``bfcl-eval`` wheel on PyPI (Apache-2.0).

The wheel is read as a zip, never installed: it pins numpy 1.26.4 and pulls in heavy
dependencies that Arena does not need for its data. Run it to check or renew the file:

    python scripts/bfcl_subset.py [WHEEL]   # default: pip download bfcl-eval==2026.3.23 --no-deps
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

VERSION = "2026.3.23"
CATEGORY = "simple_python"
EVERY = 8
TARGET = Path(__file__).resolve().parent.parent / "plugins" / "arena_quality" / "data" / "bfcl-simple-python.jsonl"


def _wheel(folder: str) -> Path:
    command = [sys.executable, "-m", "pip", "download", f"bfcl-eval=={VERSION}", "--no-deps", "--quiet", "--dest", folder]
    subprocess.run(command, check=True, timeout=600)
    return next(Path(folder).glob("bfcl_eval-*.whl"))


def subset(wheel: Path) -> list[dict]:
    with zipfile.ZipFile(wheel) as archive:
        questions = archive.read(f"bfcl_eval/data/BFCL_v4_{CATEGORY}.json").decode().splitlines()
        answers = archive.read(f"bfcl_eval/data/possible_answer/BFCL_v4_{CATEGORY}.json").decode().splitlines()
    truth = {item["id"]: item["ground_truth"] for item in map(json.loads, answers)}
    chosen = [json.loads(line) for line in questions][::EVERY]
    return [{"id": item["id"], "question": item["question"], "function": item["function"], "ground_truth": truth[item["id"]]} for item in chosen]


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        wheel = Path(sys.argv[1]) if len(sys.argv) > 1 else _wheel(folder)
        items = subset(wheel)
    TARGET.write_text("".join(json.dumps(item, ensure_ascii=False, sort_keys=True) + "\n" for item in items), encoding="utf-8")
    print(f"wrote {len(items)} items to {TARGET}")


if __name__ == "__main__":
    main()
