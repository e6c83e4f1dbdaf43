"""Turn the seed site's published cohort (``seed-cohort.json``, CC-BY-4.0) into the
``arena-cards/1`` file ``arena import --seeds`` reads (``arena_core/data/seed-cards.json``).

    python scripts/seed_cohort_cards.py ../shared/reference/seed-cohort.json

Each model becomes one card with its figures as the site published them: closed-loop workloads
with llama-benchy's per-request and total decode tokens/s at c = 10 and its TTFT mean (which the
site prints as "TTFT p50"); open-loop workloads with ``vllm bench serve``'s total and output
throughput, peak concurrent requests, achieved request rate and TTFT p50, and the site's
"tokens/sec" (total ÷ peak concurrency). Quality scores keep their provenance; the site's own
preset scores ride along as ``published_scores`` for the golden test.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from arena_core import ClosedLoopShape
from arena_workloads import STANDARD_WORKLOADS

#: The request rates the workloads ask for (the seed's files record only what was achieved).
STANDARD = {workload.name: workload for workload in STANDARD_WORKLOADS}
OUT = Path(__file__).resolve().parents[1] / "arena_core" / "data" / "seed-cards.json"
#: Cohort models that Arena's catalog knows, by their Hugging Face id: the catalog's name is used.
CATALOGUED = {"Qwen/Qwen3.6-35B-A3B-FP8": "qwen3.6-35b-a3b", "Qwen/Qwen3.5-0.8B": "qwen3.5-0.8b", "Qwen/Qwen3.6-27B-FP8": "qwen3.6-27b"}
QUALITY = {"mmlu_pro": "MMLU-Pro", "gpqa": "GPQA-Diamond", "humaneval": "HumanEval"}
FACTS = ("vendor", "architecture", "params_total_b", "params_active_b", "precision", "size_bucket", "context_k", "cohort_confidence")

#: Where a run's server differed from the file-wide settings (an FP8 KV cache, vLLM's default
#: step budget of 8192 tokens), by the seed's ``repo_path``, from its raw data (commit 956e375):
#: each run's ``meta.json`` ``server_config`` and the vLLM boot logs kept beside three runs.
#: * KV cache: four runs say ``kv_cache_dtype: auto``. On the two BF16 checkpoints that is the
#:   model's 16 bits; the two ModelOpt ones (Omni FP8, NVFP4) are taken to keep FP8, as NVIDIA's
#:   ModelOpt checkpoints of Nemotron 3 Nano ask (``kv_cache_quant_algo: FP8`` in the Nano 30B-A3B
#:   NVFP4 config, which vLLM's ``auto`` follows since PR 29980; Omni's own was not in reach).
#: * Step budget: the ``cu130-nightly`` image's vLLM (0.19.2rc1.dev134, the boot logs of
#:   Nemotron 3 Nano 4B BF16, Qwen3.6-35B-A3B BF16 and Nemotron 3 Super) compiled and scheduled
#:   2048 tokens a step ("compile range (1, 2048)"; Super's also "max_num_scheduled_tokens is set
#:   to 2048"); all seven runs on that image, taken on 4-5 May 2026, ran that build. Qwen3.5-2B
#:   ran v0.20.1: no log of its own, but its model class (Qwen3.5/3.6) schedules 2048 both before
#:   (the nightly) and after it (v0.26.0's boot logs of Qwen3.6-27B-FP8 and 35B-A3B-FP8, kept in
#:   the same repository), where Nemotron 3 Nano 30B on v0.26.0 logs 8192.
#: * Slots: Nemotron 3 Super was served with ``--max-num-seqs 20`` (its ``_profile.env``).
#: * Speculative decoding: Nemotron 3 Super ran its MTP head with 3 draft tokens a step (its
#:   ``_profile.env`` sets a speculative config; its open-loop results carry vLLM's
#:   ``spec_decode_*`` figures: 3 per-position acceptance rates, 2.62 tokens a step accepted on
#:   office-baseline), and Gemma 4 26B-A4B's MTP build 4 (4 per-position rates, 2.33-2.86). Both
#:   are simulated with their draft tokens at an assumed acceptance and left out of every fit.
#: * 16-bit compute: three NVFP4 runs computed through Marlin's weight-only FP4 kernels, which
#:   multiply in 16 bits. Nemotron 3 Super: its ``_profile.env`` sets ``VLLM_NVFP4_GEMM_BACKEND=marlin``
#:   and ``--moe-backend marlin``, and its ``_bootlog.txt`` logs "Using MarlinNvFp4LinearKernel"
#:   and the 'MARLIN' NvFp4 MoE backend; Mistral Small 3.2: ``INDEX.md`` says (in Dutch) that its
#:   run needed ``VLLM_NVFP4_GEMM_BACKEND=marlin`` on GB10, in place of a broken CUTLASS FP4 kernel;
#:   Gemma 4 26B-A4B's ``nvfp4-v23``: ``INDEX.md`` names it "nvidia NVFP4, modelopt+marlin".
#:   Nemotron 3 Nano Omni's NVFP4 run (v0.20.0) names no kernel and is left at the FP4 roof.
NIGHTLY = {"token_budget": 2048}
MARLIN = {"sixteen_bit_compute": True}
SERVER_SETTINGS = {
    "results/qwen-3.5/qwen-3.5-0.8b/bf16": NIGHTLY,
    "results/qwen-3.5/qwen-3.5-2b/bf16": NIGHTLY,
    "results/qwen-3.6/qwen-3.6-35b-a3b/fp8": NIGHTLY,
    "results/qwen-3.6/qwen-3.6-35b-a3b/bf16": NIGHTLY | {"kv_cache_dtype": "auto"},
    "results/qwen-3.6/qwen-3.6-27b/fp8": NIGHTLY,
    "results/nemotron-3/nemotron-3-nano-4b/bf16": NIGHTLY,
    "results/nemotron-3/nemotron-3-nano-4b/fp8": NIGHTLY,
    "results/nemotron-3/nemotron-3-super-120b-a12b/nvfp4": NIGHTLY | MARLIN | {"slots": 20, "speculative_tokens": 3},
    "results/gemma-4/gemma-4-26b-a4b-it/mtp-v23": {"speculative_tokens": 4},
    "results/gemma-4/gemma-4-26b-a4b-it/nvfp4-v23": MARLIN,
    "results/mistral-small/mistral-small-3.2-24b-it/nvfp4": MARLIN,
    "results/nemotron-3/nemotron-3-nano-omni-30b-a3b-reasoning/bf16": {"kv_cache_dtype": "auto"},
}


#: The prompts the seed's servers counted. Its llama-benchy could not load the served model's
#: tokenizer (the served name is no Hugging Face id: "Falling back to 'gpt2' tokenizer as
#: approximation", every closed-loop log) and cut its prompts from the corpus in GPT-2's tokens;
#: the server counted that text in the model's own, about 0.9 as many. Per run, from its raw data
#: (commit 956e375): (the server's tokens per GPT-2 token of prompt text, what the chat template
#: adds to a user message alone, and to one with a system message). The first is the median over
#: ``A_context-scaling.md``'s one-user rows at 8,192, 16,384 and 25,000 tokens of the prompt
#: tokens llama-benchy used (its pp t/s times its est_ppt: the server's usage count, which it
#: takes within 20 % of what it sent), less the template's; the others are its logs' warm-up
#: lines ("Warmup (User only) complete. Delta: N tokens", "Warmup (System+Empty) ...").
#: llama-benchy takes a template's tokens out of the prompt it sends (down to one token), so a
#: depth-0 test's server saw (pp - template) x ratio + template; the seed's multi-turn, whose
#: 4 tokens of history go as a system message, pp x ratio + the system template's (its
#: ``--depth`` is not adapted into the prompt).
PROMPTS_AS_COUNTED = {
    "results/qwen-3.5/qwen-3.5-0.8b/bf16": (0.904, 10, 15),
    "results/qwen-3.5/qwen-3.5-2b/bf16": (0.906, 10, 15),
    "results/ministral-3/ministral-3-3b-instruct/bf16": (0.907, 3, 5),
    "results/ministral-3/ministral-3-8b-instruct/bf16": (0.908, 3, 5),
    "results/qwen-3.6/qwen-3.6-35b-a3b/fp8": (0.91, 8, 13),
    "results/gemma-4/gemma-4-26b-a4b-it/bf16-v23": (0.902, 11, 17),
    "results/gemma-4/gemma-4-26b-a4b-it/mtp-v23": (0.897, 11, 17),
    "results/gemma-4/gemma-4-26b-a4b-it/nvfp4-v23": (0.903, 11, 17),
    "results/qwen-3.6/qwen-3.6-27b/fp8": (0.912, 8, 13),
    "results/mistral-small/mistral-small-3.2-24b-it/nvfp4": (0.954, 634, 13),
    "results/nemotron-3/nemotron-3-super-120b-a12b/nvfp4": (0.906, 16, 16),
    "results/nemotron-3/nemotron-3-nano-omni-30b-a3b-reasoning/nvfp4": (0.914, 15, 28),
    "results/nemotron-3/nemotron-3-nano-4b/bf16": (0.888, 16, 16),
    "results/nemotron-3/nemotron-3-nano-omni-30b-a3b-reasoning/bf16": (0.895, 15, 28),
    "results/nemotron-3/nemotron-3-nano-omni-30b-a3b-reasoning/fp8": (0.903, 15, 28),
    "results/qwen-3.6/qwen-3.6-35b-a3b/bf16": (0.908, 8, 13),
    "results/nemotron-3/nemotron-3-nano-4b/fp8": (0.9, 16, 16),
}


def measured_prompts(repo_path: str) -> dict[str, dict[str, int]]:
    """The closed-loop workloads' prompt tokens as ``repo_path``'s server counted them (:data:`PROMPTS_AS_COUNTED`)."""
    ratio, user, system = PROMPTS_AS_COUNTED[repo_path]
    counted = {}
    for workload in STANDARD_WORKLOADS:
        if isinstance(workload.shape, ClosedLoopShape):
            stated = workload.shape.prompt_tokens
            tokens = round(stated * ratio) + system if workload.name == "multi-turn" else round(max(1, stated - user) * ratio) + user
            counted[workload.name] = {"prompt_tokens": tokens}
    return counted


def closed_line(figures: dict) -> dict:
    return {
        "tokens_per_second": figures["tps_req_c10"],
        "ttft_p50_s": round(figures["ttfr_mean_ms_c10"] / 1000, 5),  # the site's "TTFT p50" is llama-benchy's mean
        "ttfr_mean_s": round(figures["ttfr_mean_ms_c10"] / 1000, 5),
        "decode_tps_total": figures["tps_total_c10"],
    }


def open_line(figures: dict, requested_rate: float | None) -> dict:
    site_tps = figures["total_token_throughput"] / figures["max_concurrent_requests"]
    return {
        "requested_rate": requested_rate,
        "tokens_per_second": round(site_tps, 4),  # what the site prints as "tokens/sec"
        "site_tps": round(site_tps, 4),
        "ttft_p50_s": round(figures["p50_ttft_ms"] / 1000, 5),
        "total_tps": round(figures["total_token_throughput"], 4),
        "output_tps": round(figures["output_throughput"], 4),
        "peak_concurrency": figures["max_concurrent_requests"],
        "request_throughput": round(figures["request_throughput"], 5),
        "completed": figures["completed"],
        "failed": figures["failed"],
    }


def card(model: dict, modes: dict[str, str], licence: str) -> dict:
    run = model["run"]
    quality = model["quality"]
    workloads = {}
    for name, mode in modes.items():
        figures = model["benches"].get(name)
        rate = getattr(STANDARD.get(name) and STANDARD[name].shape, "request_rate", None)
        workloads[name] = None if not figures else (closed_line(figures) if mode == "closed" else open_line(figures, rate))
    published = {k: v for k, v in model["published_scores"].items() if k != "source" and v is not None}
    return {
        "model": CATALOGUED.get(run["hf_model"], model["id"]),
        "model_title": model["display_name"],
        "hardware": "gb10",
        "backend": "vllm",
        "engine": f"vLLM {run['vllm_image'].rpartition(':')[2]} (reference tools: {run['closed_loop_tool']}, vllm bench serve)",
        "measured_at": run["generated_at"][:10],
        "source": f"published by the seed site (LLM Arena, {licence})",
        "model_memory_gb": model["vram_gb"],
        "quality": [
            {"benchmark": title, "value": quality.get(key), "source": f"seed site: {quality.get('source') or 'not published'}"}
            for key, title in QUALITY.items()
            if quality.get("status")
        ],
        "model_facts": {"hf_model": run["hf_model"], "served_name": run["served_name"], **{key: model.get(key) for key in FACTS}},
        "published_scores": published,
        "workloads": workloads,
        "measured_shapes": measured_prompts(run["repo_path"]),
    } | ({"server_settings": SERVER_SETTINGS[run["repo_path"]]} if run["repo_path"] in SERVER_SETTINGS else {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cohort", type=Path, help="seed-cohort.json")
    args = parser.parse_args()
    data = json.loads(args.cohort.read_text())
    modes = {bench["id"]: bench["mode"] for bench in data["benches"]}
    cards = {
        "format": "arena-cards/1",
        "description": "The seed site's published v1 cohort: 17 models on a DGX Spark (GB10) with vLLM, May-June 2026.",
        "licence": data["licence"],
        "attribution": f"Figures and quality scores published by the seed site: {data['licence']}; raw data {data['sources']['raw_data_repo']}",
        # what the seed's runs measured where Arena's workload differs, and its servers' KV cache
        # (shared/spec/workloads.md, "What the seed site actually ran"): the prediction simulates what ran
        "measured_shapes": {"multi-turn": {"turns": 1, "depth": 4}},
        "server_settings": {"kv_cache_dtype": "fp8"},
        "measured_shapes_note": (
            "What the seed's raw data shows it ran where Arena's workload differs (shared/spec/workloads.md): multi-turn ran the "
            "literal --pp 2048 --tg 512 --depth 4, four tokens of history at c = 10, not a five-turn conversation. "
            "Each card's own measured_shapes give its closed-loop prompts as its server counted them: llama-benchy fell back to "
            "GPT-2's tokenizer, and the model's own counted about 0.9 as many tokens (Mistral Small 3.2's template adds 634 more). "
            "Its vLLM servers kept an FP8 KV cache and took 8192 tokens a step, except where a card's own server_settings say otherwise: "
            "those come from each run's meta.json and the vLLM boot logs in the raw data (scripts/seed_cohort_cards.py says which)."
        ),
        "cards": [card(model, modes, data["licence"]) for model in data["models"]],
    }
    OUT.write_text(json.dumps(cards, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cards['cards'])} cards written to {OUT}")


if __name__ == "__main__":
    main()
