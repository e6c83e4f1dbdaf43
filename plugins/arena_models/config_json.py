"""A model Arena has never heard of, from what describes it: a Hugging Face ``config.json`` (a
file, or a model id found in the local Hugging Face cache) and a few stated facts.

The fields that matter to serving are read per architecture family -- layers, width, query and
KV heads, head size, the MLP's width, experts (routed, per token, shared), sliding windows and
their pattern, linear-attention (Gated DeltaNet) and Mamba state layers, tied embeddings, the
quantisation -- and the parameter counts are computed from them. What had to be assumed is
returned with the model, so that a prediction says it; nothing is silently guessed: a mixture of
experts whose active parameters can be neither read nor computed is an error, never dense.

A config is outside data: every number is checked against bounds, every string cut and cleaned.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from arena_core import DescribedModel, ModelArchitecture, ModelQuery, ModelSpec, UsageError, known_precision, read_json_file, slug

#: A Hugging Face model id (``org/name``), as opposed to a catalog name.
HF_ID = re.compile(r"[\w.-]+/[\w.-]+")
#: Longest text kept of what a config calls its model or its architecture class.
NAME_CHARS = 120
#: The largest config.json read (real ones are a few kilobytes; a multimodal one tens).
MAX_CONFIG_BYTES = 1_000_000
#: Bounds on what a config may say (the largest models published have some 256 layers, 64k
#: width, 1k experts, a 1M-token window).
LIMITS = {"layers": 1024, "width": 1 << 17, "heads": 4096, "experts": 4096, "vocab": 1 << 22, "window": 1 << 24}
#: quantization_config's ``quant_method`` (and a few of their formats) to the precision Arena knows.
QUANT_METHODS = {"fp8": "FP8", "fbgemm_fp8": "FP8", "mxfp4": "MXFP4", "awq": "AWQ", "gptq": "INT4", "bitsandbytes": "INT8"}
#: quantization_config's lists of the modules a quantisation leaves in 16 bits: compressed-tensors'
#: and ModelOpt's ``ignore``, ModelOpt's ``exclude_modules``, Hugging Face's ``modules_to_not_convert``.
UNQUANTISED_LISTS = ("ignore", "exclude_modules", "modules_to_not_convert")
#: A module name that is one layer's attention or linear-attention projection: its layer, the projection.
PROJECTION = re.compile(r"layers\.(\d+)\.(?:\w+\.)*?(q_proj|k_proj|v_proj|o_proj|qkv_proj|in_proj(?:_[a-z]+)?|out_proj)$")
#: The ``*`` patterns read from those lists (each is tried on every layer's projections).
MAX_PATTERNS = 64
#: Each kind of layer's blocks, as checkpoints name them, and its projections.
BLOCKS = {
    "full": (("self_attn", "mixer"), ("q_proj", "k_proj", "v_proj", "o_proj")),
    "window": (("self_attn",), ("q_proj", "k_proj", "v_proj", "o_proj")),
    "mamba": (("mixer",), ("in_proj", "out_proj")),
    "linear": (("linear_attn",), ("in_proj", "out_proj")),
}
#: Modules quantisations leave as they are and no count misses, by a part of their name: the LM
#: head (counted in 16 bits already), routers, convolutions, embeddings, norms (``*norm*``) and a
#: multimodal model's encoders and projectors (parts that start so).
ALWAYS_UNQUANTISED = ("lm_head", "router", "gate", "conv1d", "embed_tokens", "embeddings")
ENCODER_PARTS = ("vision", "visual", "audio", "sound", "mm_", "multi_modal", "mlp1")


def find_config(given: str) -> Path:
    """``given`` as a config.json: a file, a folder holding one, or a Hugging Face model id in the
    local cache (``HF_HOME``, else ``~/.cache/huggingface``): nothing is downloaded."""
    path = Path(given).expanduser()
    if path.is_file():
        return path
    if (path / "config.json").is_file():
        return path / "config.json"
    if HF_ID.fullmatch(given):
        return (cached_snapshot(given) / "config.json").resolve()  # the cache's snapshot links to its blob
    raise UsageError(f"--model-config: {given}: no such file (give a config.json, a folder holding one, or a model id in the Hugging Face cache)")


def cached_snapshot(model_id: str) -> Path:
    """The newest snapshot folder of ``model_id`` in the local Hugging Face cache that holds a
    config.json (its files link to the cache's blobs; the folder is what a server is given)."""
    home = Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface")
    snapshots = home / "hub" / f"models--{model_id.replace('/', '--')}" / "snapshots"
    found = sorted(snapshots.glob("*/config.json"), key=lambda p: p.stat().st_mtime) if snapshots.is_dir() else []
    if not found:
        raise UsageError(f"--model-config: {model_id!r} is not in the local Hugging Face cache ({snapshots.parent}); download its config.json first")
    return found[-1].parent


def _number(config: Mapping[str, Any], *keys: str, limit: int, default: int | None = None, assumed: list[str] | None = None) -> int | None:
    """The first of ``keys`` the config sets, as a whole number within ``limit``; else ``default``,
    said in ``assumed`` where given (a layout figure taken, not an absence that is itself a fact)."""
    for key in keys:
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or not 0 < value <= limit:
            raise UsageError(f"--model-config: {key} = {repr(value)[:40]} is not a whole number from 1 to {limit}")
        return int(value)
    if assumed is not None and default is not None:
        assumed.append(f"no {keys[0]} in the config: {default:,} assumed")
    return default


def _text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """A multimodal config keeps the language model's fields under ``text_config``."""
    inner = config.get("text_config")
    return {**config, **inner} if isinstance(inner, Mapping) else config


def _layer_kinds(config: Mapping[str, Any], layers: int) -> list[str]:
    """Each layer's kind: "full", "window", "linear" (Gated DeltaNet) or "mamba", from
    ``layer_types``, a sliding-window pattern, or Nemotron-H's ``hybrid_override_pattern``."""
    kinds = config.get("layer_types")
    if isinstance(kinds, list) and kinds:
        named = {"full_attention": "full", "sliding_attention": "window", "linear_attention": "linear", "mamba": "mamba", "attention": "full"}
        return [named.get(str(kind), "full") for kind in kinds[:layers]]
    pattern = config.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        return [kind for kind in _pattern_kinds(pattern) if kind != "mlp"][:layers]  # an MLP layer: no attention
    every = config.get("sliding_window_pattern")
    if isinstance(every, int) and every > 1 and config.get("sliding_window"):
        return ["full" if (index + 1) % every == 0 else "window" for index in range(layers)]
    return ["full"] * layers


def _architecture(text: Mapping[str, Any], source: str, assumed: list[str]) -> tuple[ModelArchitecture, list[str]]:
    """The architecture a config's text part states, and the kind of each layer; what had to
    be assumed is added to ``assumed``."""
    layers = _number(text, "num_hidden_layers", "n_layer", limit=LIMITS["layers"])
    hidden = _number(text, "hidden_size", "d_model", "n_embd", limit=LIMITS["width"])
    heads = _number(text, "num_attention_heads", "n_head", limit=LIMITS["heads"])
    vocab = _number(text, "vocab_size", limit=LIMITS["vocab"])
    if layers is None or hidden is None or heads is None or vocab is None:
        missing = [k for k, v in (("num_hidden_layers", layers), ("hidden_size", hidden), ("num_attention_heads", heads), ("vocab_size", vocab)) if v is None]
        raise UsageError(f"--model-config: {source} does not say {', '.join(missing)}: not a language model's config.json")
    kv_heads = _number(text, "num_key_value_heads", limit=LIMITS["heads"])
    if kv_heads is None:
        kv_heads = heads
        assumed.append(f"no num_key_value_heads: every query head has its own KV head ({heads})")
    head_dim = _number(text, "head_dim", limit=LIMITS["width"]) or hidden // heads
    kinds = _layer_kinds(text, layers)
    window = _number(text, "sliding_window", limit=LIMITS["window"], default=0) if "window" in kinds else 0
    experts = _number(text, "num_experts", "num_local_experts", "n_routed_experts", limit=LIMITS["experts"], default=0) or 0
    per_token = _number(text, "num_experts_per_tok", "moe_topk", limit=LIMITS["experts"], default=0) or 0
    if experts and not per_token:
        raise UsageError(f"--model-config: {source} has {experts} experts but no num_experts_per_tok: say --active-params, never simulated as dense")
    return (
        ModelArchitecture(
            layers=layers,
            full_attention_layers=kinds.count("full"),
            sliding_window_layers=kinds.count("window"),
            sliding_window=window or 0,
            kv_heads=kv_heads,
            head_dim=head_dim,
            vocab=vocab,
            hidden=hidden,
            query_heads=heads,
            experts=experts,
            experts_per_token=per_token,
            source=f"{source} ({text.get('model_type', 'unknown type')!s:.40})",
            **_state_layers(text, kinds, assumed),
        ),
        kinds,
    )


def describe(
    config: Mapping[str, Any],
    *,
    name: str,
    precision: str | None = None,
    params_b: float | None = None,
    active_params_b: float | None = None,
    source: str = "config.json",
) -> DescribedModel:
    """The model a config describes; ``precision``, ``params_b`` and ``active_params_b`` given
    by the user override what the config says or what is computed from it."""
    text = _text_config(config)
    assumed: list[str] = []
    arch, kinds = _architecture(text, source, assumed)
    experts = arch.experts
    total, active = _parameters(text, arch, kinds, assumed)
    chosen_precision = precision or _precision(text, assumed)
    quant = text.get("quantization_config")
    kept = _sixteen_bit_params(quant, arch, _numbered_kinds(text, kinds), assumed) if isinstance(quant, Mapping) else 0.0
    if params_b is not None:
        total = params_b * 1e9
    if active_params_b is not None:
        active = active_params_b * 1e9
    if params_b is not None and active_params_b is None and experts:
        active = total * (active / max(1.0, _parameters(text, arch, kinds)[0]))  # the config's share active, at the size given
        assumed.append("active parameters scaled from the config's share of them")
    if not experts and active_params_b is not None and active_params_b * 1e9 < total:
        assumed.append("fewer active than total parameters but no experts in the config: a mixture of experts of unknown layout")
    known_precision(chosen_precision)
    spec = ModelSpec(
        name=name,
        title=name,
        description=f"described by {source}",
        hf_id="",
        precision=chosen_precision,
        params_total_b=round(total / 1e9, 3),
        params_active_b=round(active / 1e9, 3),
        params_sixteen_bit_b=round(min(kept, active) / 1e9, 3) or None,
        context_length=_number(text, "max_position_embeddings", limit=LIMITS["window"]),
        architecture=arch,
    )
    return DescribedModel(spec=spec, assumptions=tuple(assumed))


def _state_layers(text: Mapping[str, Any], kinds: list[str], assumed: list[str]) -> dict[str, int]:
    """The linear-attention (Gated DeltaNet) or Mamba-2 layers' state: heads, sizes, kernel."""
    if "linear" in kinds:
        return {
            "linear_attention_layers": kinds.count("linear"),
            "linear_key_heads": _number(text, "linear_num_key_heads", limit=LIMITS["heads"], default=16, assumed=assumed) or 16,
            "linear_value_heads": _number(text, "linear_num_value_heads", limit=LIMITS["heads"], default=32, assumed=assumed) or 32,
            "linear_head_dim": _number(text, "linear_value_head_dim", "linear_key_head_dim", limit=LIMITS["width"], default=128, assumed=assumed) or 128,
            "linear_conv_kernel": _number(text, "linear_conv_kernel_dim", limit=64, default=4, assumed=assumed) or 4,
        }
    if "mamba" in kinds:
        return {
            "linear_attention_layers": kinds.count("mamba"),
            "linear_key_heads": _number(text, "n_groups", limit=LIMITS["heads"], default=8, assumed=assumed) or 8,
            "linear_value_heads": _number(text, "mamba_num_heads", limit=LIMITS["heads"], default=64, assumed=assumed) or 64,
            "linear_head_dim": _number(text, "mamba_head_dim", limit=LIMITS["width"], default=64, assumed=assumed) or 64,
            "linear_key_dim": _number(text, "ssm_state_size", limit=LIMITS["width"], default=128, assumed=assumed) or 128,
            "linear_conv_kernel": _number(text, "conv_kernel", limit=64, default=4, assumed=assumed) or 4,
            "linear_chunk": _number(text, "chunk_size", "mamba_chunk_size", limit=LIMITS["window"], default=0) or 0,
        }
    return {}


def _parameters(text: Mapping[str, Any], arch: ModelArchitecture, kinds: list[str], assumed: list[str] | None = None) -> tuple[float, float]:
    """Total and active parameters from the layout: embeddings (and an untied LM head), each
    layer's attention or state projections, and its MLP -- dense, or routed experts (all of them
    in total, ``experts_per_token`` active) plus shared ones; an MLP width the config does not
    say is taken as 4 × the hidden size, and said in ``assumed``."""
    hidden = arch.hidden
    attention, linear = arch.attention_params(), arch.linear_layer_params() if arch.linear_attention_layers else 0
    widths = ("moe_intermediate_size", "expert_intermediate_size") if arch.experts else ()  # an expert's, else the dense MLP's
    mlp_width = _number(text, *widths, "intermediate_size", "ffn_hidden_size", limit=LIMITS["width"] * 8, default=4 * hidden, assumed=assumed) or 4 * hidden
    shared_width = _number(text, "shared_expert_intermediate_size", limit=LIMITS["width"] * 8, default=0) or 0
    shared_width = shared_width or (_number(text, "n_shared_experts", "num_shared_experts", limit=64, default=0) or 0) * mlp_width
    mixer = sum(attention if kind in ("full", "window") else linear for kind in kinds)
    pattern = text.get("hybrid_override_pattern")
    # a hybrid pattern gives each layer one part: "M" Mamba, "*" attention, "-" MLP, "E" experts
    mlp_layers = sum(1 for c in pattern if c in "-E") if isinstance(pattern, str) and pattern else arch.layers
    # a gated MLP (SwiGLU, GeGLU) has three matrices; Nemotron-H's squared ReLU two
    matrices = 2 if str(text.get("mlp_hidden_act") or text.get("hidden_act")) == "relu2" else 3
    if arch.experts:
        routed = arch.experts * matrices * hidden * mlp_width
        routed_active = arch.experts_per_token * matrices * hidden * mlp_width
        shared = matrices * hidden * shared_width + hidden * arch.experts  # and the router
        mlp_total, mlp_active = mlp_layers * (routed + shared), mlp_layers * (routed_active + shared)
    else:
        mlp_total = mlp_active = mlp_layers * matrices * hidden * mlp_width
    embeddings = arch.vocab * hidden * (1 if text.get("tie_word_embeddings", False) else 2)
    return embeddings + mixer + mlp_total, embeddings + mixer + mlp_active


def _projection_params(arch: ModelArchitecture, kind: str, projection: str) -> int:
    """One projection's parameters in a layer of ``kind`` (0: not one that kind of layer has)."""
    if kind in ("mamba", "linear"):
        # Mamba-2's in_proj, or Gated DeltaNet's split in two (queries, keys, values, gates; the
        # decay and beta per value head) or four
        heads, inner = arch.linear_value_heads, arch.linear_value_heads * arch.linear_head_dim
        whole = arch.linear_layer_params() - inner * arch.hidden
        parts = {"in_proj": whole, "in_proj_qkvz": whole, "in_proj_qkv": whole - inner * arch.hidden, "in_proj_z": inner * arch.hidden}
        parts |= {"in_proj_ba": 2 * heads * arch.hidden, "in_proj_b": heads * arch.hidden, "in_proj_a": heads * arch.hidden, "out_proj": inner * arch.hidden}
        return parts.get(projection, 0)
    if kind not in ("full", "window"):
        return 0  # an MLP or experts' layer: its projections are not counted here
    query, kv = arch.query_heads * arch.head_dim, arch.kv_heads * arch.head_dim
    out = query * arch.hidden
    return {
        "q_proj": arch.hidden * query,
        "k_proj": arch.hidden * kv,
        "v_proj": arch.hidden * kv,
        "qkv_proj": arch.hidden * (query + 2 * kv),
        "o_proj": out,
        "out_proj": out,
    }.get(projection, 0)


def _sixteen_bit_params(quant: Mapping[str, Any], arch: ModelArchitecture, kinds: list[str], assumed: list[str]) -> float:
    """Parameters of the attention and linear-attention projections ``quant`` leaves in 16 bits
    (:data:`UNQUANTISED_LISTS`: names or ``*`` patterns), counted from the layout; modules of
    other kinds it names, and ``re:`` expressions (a config's regular expression could run
    for hours), are said in ``assumed``, not counted."""
    named = [str(name)[:300] for key in UNQUANTISED_LISTS if isinstance(quant.get(key), list) for name in quant[key][:4096]]
    kept: dict[tuple[int, str], int] = {}
    uncounted, patterns = 0, 0
    for name in named:
        patterns += "*" in name
        if name.startswith("re:") or patterns > MAX_PATTERNS:
            hits = []
        else:
            hits = _pattern_hits(name, kinds) if "*" in name else _name_hits(name, kinds)
        sizes = {(layer, projection): _projection_params(arch, kinds[layer], projection) for layer, projection in hits}
        kept.update({hit: size for hit, size in sizes.items() if size})
        if not any(sizes.values()) and not _always_unquantised(name):
            uncounted += 1
    if uncounted:
        assumed.append(f"quantization_config leaves {uncounted} more modules unquantised: not counted (only attention and linear-attention projections are)")
    return float(sum(kept.values()))


def _always_unquantised(name: str) -> bool:
    """A module no quantisation touches (:data:`ALWAYS_UNQUANTISED`), or a multimodal encoder's."""
    parts = name.lower().removeprefix("re:").split(".")
    return any(part in ALWAYS_UNQUANTISED or "norm" in part or part.startswith(ENCODER_PARTS) for part in parts)


def _name_hits(name: str, kinds: list[str]) -> list[tuple[int, str]]:
    """The (layer, projection) a module's full name is, if it is one."""
    found = PROJECTION.search(name)
    return [(int(found.group(1)), found.group(2))] if found and int(found.group(1)) < len(kinds) else []


def _pattern_hits(pattern: str, kinds: list[str]) -> list[tuple[int, str]]:
    """The (layer, projection)s a ``*`` pattern names, tried on each layer's
    projections under the names checkpoints give them (``model.layers.N.self_attn.q_proj``,
    ``backbone.layers.N.mixer.in_proj``, ...)."""
    matches = re.compile(fnmatch.translate(pattern)).match
    hits = []
    for layer, kind in enumerate(kinds):
        blocks, projections = BLOCKS.get(kind, ((), ()))
        for projection in projections:
            names = (f"{root}.{layer}.{block}.{projection}" for root in ("model.layers", "backbone.layers", "model.language_model.layers") for block in blocks)
            if any(matches(full) for full in names):
                hits.append((layer, projection))
    return hits


def _pattern_kinds(pattern: str) -> list[str]:
    """Nemotron-H's ``hybrid_override_pattern``, a kind for each layer as its checkpoints number
    them: "M" Mamba-2, "*" attention, and "mlp" for "-" (an MLP) or "E" (experts)."""
    return [{"M": "mamba", "*": "full"}.get(c, "mlp") for c in pattern[: LIMITS["layers"]]]


def _numbered_kinds(text: Mapping[str, Any], kinds: list[str]) -> list[str]:
    """Each layer's kind by the number checkpoints give it: Nemotron-H's pattern numbers its MLP
    and expert layers too, where ``kinds`` lists the attention and state layers only."""
    pattern = text.get("hybrid_override_pattern")
    return _pattern_kinds(pattern) if isinstance(pattern, str) and pattern else kinds


def _precision(text: Mapping[str, Any], assumed: list[str]) -> str:
    """The weights' precision from ``quantization_config``, else ``torch_dtype``/``dtype``."""
    quant = text.get("quantization_config")
    if isinstance(quant, Mapping):
        method = str(quant.get("quant_method", "")).lower()
        if method in QUANT_METHODS:
            return QUANT_METHODS[method]
        formats = json.dumps(quant)[:4000].lower()
        if "nvfp4" in formats or "fp4" in formats:
            return "NVFP4"
        if "float-quantized" in formats or '"fp8"' in formats or "e4m3" in formats:
            return "FP8"
        assumed.append(f"quantisation {method or 'unnamed'!r} not known: BF16 assumed")
        return "BF16"
    dtype = str(text.get("torch_dtype") or text.get("dtype") or "").lower()
    if dtype in ("bfloat16", "float16", "float32"):
        return {"bfloat16": "BF16", "float16": "FP16", "float32": "FP32"}[dtype]
    assumed.append("no dtype or quantisation stated: BF16 assumed")
    return "BF16"


def read_config(path: Path) -> dict[str, Any]:
    """The config file's JSON object, size-capped; a one-line error naming the file otherwise."""
    try:
        data = read_json_file(path, max_bytes=MAX_CONFIG_BYTES)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--model-config: {path}: not a readable config.json ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError(f"--model-config: {path}: not a JSON object")
    return data


def describe_source(query: ModelQuery) -> DescribedModel | None:
    """The model ``query.source`` names, read from its config.json (see :class:`ModelQuery`);
    ``None`` for a model to serve that names no folder or Hugging Face id (a catalog name). A
    problem is one line that starts with ``query.named_by``."""
    given = query.source
    hub_id = HF_ID.fullmatch(given) is not None and not Path(given).expanduser().exists()
    if query.serve and not (hub_id or Path(given).expanduser().is_dir()):
        return None
    try:
        path = find_config(given)
        data = read_config(path)
        # a cached hub id: its snapshot folder (config.json resolves into the cache's blobs)
        folder = cached_snapshot(given) if hub_id else path.parent
        base = given.rsplit("/", 1)[-1] if hub_id else folder.name
        name = slug(query.name or (base if query.serve else _own_name(data, path))) or "described-model"
        described = describe(
            data,
            name=name,
            precision=query.precision,
            params_b=query.params_b,
            active_params_b=query.active_params_b,
            source=f"{base}/config.json" if query.serve else path.name,
        )
    except UsageError as exc:
        raise UsageError(str(exc).replace("--model-config", query.named_by, 1)) from None
    except (ValueError, ArithmeticError) as exc:  # a config's numbers that no layout can hold: outside data, not a bug
        raise UsageError(f"{query.named_by}: {given}: not a layout Arena can read ({type(exc).__name__}: {str(exc)[:120]})") from None
    architectures = data.get("architectures")
    described = attrs.evolve(
        described,
        config_name=_text(data.get("_name_or_path") or data.get("_model_name_or_path")),
        architecture_class=_text(architectures[0]) if isinstance(architectures, list) and architectures else "",
    )
    if not query.serve:
        return described
    if not any(p.is_file() for p in folder.glob("*.safetensors")):
        raise UsageError(f"{query.named_by}: {folder} holds no *.safetensors weights (vLLM serves a folder with config.json and safetensors)")
    assumed = f"; assumed: {'; '.join(described.assumptions)}" if described.assumptions else ""
    spec = attrs.evolve(
        described.spec,
        title=base,
        hf_id=given if hub_id else "",
        description=f"read from {base}/config.json{assumed}",
        files={"hf_folder": str(folder.absolute())},
    )
    return attrs.evolve(described, spec=spec)


def _own_name(config: Mapping[str, Any], path: Path) -> str:
    """What a config calls its model (the last part of ``_name_or_path``), else its folder's name."""
    said = config.get("_name_or_path")
    return said.rsplit("/", 1)[-1] if isinstance(said, str) and said else path.parent.name


def _text(value: Any) -> str:
    """A config's string, printable and cut to :data:`NAME_CHARS` ("" for anything else)."""
    return "".join(char for char in value if char.isprintable())[:NAME_CHARS] if isinstance(value, str) else ""
