"""The measuring instrument: streaming client, drivers, prompt building, metrics.

Runner plugins import what they need from here.
"""

from arena_core.loadgen.chat import ChatClient, ServerRefused, record_from
from arena_core.loadgen.closed_loop import ClosedLoopDriver, ClosedLoopPlan, SessionFacts
from arena_core.loadgen.closed_metrics import llama_benchy_entry, request_metrics, token_timeline
from arena_core.loadgen.closed_summary import closed_loop_result, llama_benchy_report
from arena_core.loadgen.codec import ApproximateCodec, Codec, LocalCodec, ServerCodec, choose_codec
from arena_core.loadgen.corpus import Corpus, load_corpus
from arena_core.loadgen.prompts import PromptBuilder, chat_messages
from arena_core.loadgen.records_io import RecordWriter, read_records
from arena_core.loadgen.stats import mean, median, percentile, percentile_interval, population_std
from arena_core.loadgen.verdict import verdict_for

__all__ = [
    "ApproximateCodec",
    "ChatClient",
    "ClosedLoopDriver",
    "ClosedLoopPlan",
    "Codec",
    "Corpus",
    "LocalCodec",
    "PromptBuilder",
    "RecordWriter",
    "ServerCodec",
    "ServerRefused",
    "SessionFacts",
    "chat_messages",
    "choose_codec",
    "closed_loop_result",
    "llama_benchy_entry",
    "llama_benchy_report",
    "load_corpus",
    "mean",
    "median",
    "percentile",
    "percentile_interval",
    "population_std",
    "read_records",
    "record_from",
    "request_metrics",
    "token_timeline",
    "verdict_for",
]
