"""The measuring instrument: streaming client, drivers, prompt building, datasets, metrics.

Runner plugins import these names from :mod:`arena_core` (which re-exports them), never from
the modules below: the kit is the runners' public surface.

Closed loop (llama-benchy's semantics): :class:`ClosedLoopPlan` + :class:`ClosedLoopDriver`
measure, :func:`llama_benchy_report` and :func:`closed_loop_result` summarise.
Open loop (``vllm bench serve``'s): :func:`sample_random` / :func:`sample_sharegpt` +
:func:`arrival_offsets` build the traffic, :class:`OpenLoopPlan` + :class:`OpenLoopDriver`
measure, :func:`open_loop_report` and :func:`open_loop_result` summarise.
Shared: :class:`ChatClient`, codecs, :class:`RecordWriter`, :func:`verdict_for`, statistics,
and :func:`run_measurement` to drive a coroutine on the measuring event loop;
:func:`run_reference_tool` runs a reference tool for the external instrument.
"""

from arena_core.loadgen.arrivals import arrival_offsets
from arena_core.loadgen.bounded import read_bounded
from arena_core.loadgen.cache_state import METRICS_DEADLINE_S, METRICS_MAX_BYTES, cache_block_tokens, cache_problem, cache_rates
from arena_core.loadgen.chat import ChatClient, ServerRefused, record_from
from arena_core.loadgen.closed_loop import ClosedLoopDriver, ClosedLoopPlan, SessionFacts
from arena_core.loadgen.closed_metrics import first_token_s, llama_benchy_entry, request_metrics, token_timeline
from arena_core.loadgen.closed_summary import closed_loop_result, llama_benchy_report
from arena_core.loadgen.codec import ApproximateCodec, Codec, LocalCodec, ServerCodec, choose_codec
from arena_core.loadgen.corpus import Corpus, load_corpus
from arena_core.loadgen.datasets import SampledRequest, random_lengths, sample_random, sample_sharegpt
from arena_core.loadgen.goodput import decode_tps as stream_decode_tps
from arena_core.loadgen.goodput import first_token_s as first_output_s
from arena_core.loadgen.loop import run as run_measurement
from arena_core.loadgen.open_loop import OpenLoopDriver, OpenLoopOutcome, OpenLoopPlan, outcome_from_records
from arena_core.loadgen.open_metrics import peak_concurrency
from arena_core.loadgen.open_summary import PERCENTILES, open_loop_report, open_loop_result
from arena_core.loadgen.output_count import client_output_count
from arena_core.loadgen.prompts import PromptBuilder, chat_messages
from arena_core.loadgen.records_io import RecordWriter, read_records
from arena_core.loadgen.refusal import clean_text, refusal
from arena_core.loadgen.sharegpt import DatasetError, load_two_turn_conversations
from arena_core.loadgen.stats import mean, median, nearest_rank, percentile, percentile_interval, population_std
from arena_core.loadgen.stream import ANSWER
from arena_core.loadgen.tool_calls import ToolCallCollector, ToolCallsRead, read_tool_calls
from arena_core.loadgen.tools import run_reference_tool, script_interpreter
from arena_core.loadgen.verdict import verdict_for

__all__ = [
    "ANSWER",
    "PERCENTILES",
    "ApproximateCodec",
    "ChatClient",
    "ClosedLoopDriver",
    "ClosedLoopPlan",
    "Codec",
    "Corpus",
    "DatasetError",
    "LocalCodec",
    "OpenLoopDriver",
    "OpenLoopOutcome",
    "OpenLoopPlan",
    "PromptBuilder",
    "RecordWriter",
    "SampledRequest",
    "ServerCodec",
    "ServerRefused",
    "ToolCallCollector",
    "ToolCallsRead",
    "SessionFacts",
    "arrival_offsets",
    "METRICS_DEADLINE_S",
    "METRICS_MAX_BYTES",
    "cache_block_tokens",
    "cache_problem",
    "refusal",
    "read_tool_calls",
    "clean_text",
    "script_interpreter",
    "cache_rates",
    "chat_messages",
    "choose_codec",
    "client_output_count",
    "closed_loop_result",
    "first_token_s",
    "first_output_s",
    "stream_decode_tps",
    "llama_benchy_entry",
    "llama_benchy_report",
    "load_corpus",
    "load_two_turn_conversations",
    "mean",
    "median",
    "open_loop_report",
    "open_loop_result",
    "outcome_from_records",
    "peak_concurrency",
    "percentile",
    "nearest_rank",
    "percentile_interval",
    "population_std",
    "random_lengths",
    "read_bounded",
    "read_records",
    "record_from",
    "request_metrics",
    "run_measurement",
    "run_reference_tool",
    "sample_random",
    "sample_sharegpt",
    "token_timeline",
    "verdict_for",
]
