"""Make a GGUF servable by a vLLM that cannot read it: dequantize it with transformers' GGUF loader
and write a Hugging Face folder (config.json, model.safetensors in bf16, the tokenizer).

Run by the ``vllm`` backend with the interpreter that has vLLM (it has torch and transformers;
Arena's own interpreter may have neither), as ``python gguf_to_hf.py GGUF FOLDER``. It imports
nothing of Arena. It writes into ``FOLDER`` and prints one JSON line of what it did; the backend
writes into a temporary folder and renames it, so a folder that exists is whole.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def convert(gguf: Path, folder: Path) -> dict[str, object]:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    started = time.monotonic()
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # A model loaded from GGUF keeps a GGUF quantizer that refuses to be saved; the weights it
    # holds are already dequantized, so the folder is a plain bf16 checkpoint without it.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.dtype = torch.bfloat16
    model.save_pretrained(str(folder), safe_serialization=True)
    tokenizer.save_pretrained(str(folder))
    return {
        "source": gguf.name,
        "dtype": "bfloat16",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "seconds": round(time.monotonic() - started, 1),
        "chat_template": bool(getattr(tokenizer, "chat_template", None)),
    }


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: gguf_to_hf.py GGUF FOLDER", file=sys.stderr)
        return 2
    done = convert(Path(sys.argv[1]), Path(sys.argv[2]))
    print(json.dumps(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
