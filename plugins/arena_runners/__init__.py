"""Runners: the llama-benchy (closed-loop) and vllm-bench (open-loop) load generators.

Nothing is registered yet: a runner is registered only once it really measures. The
closed-loop runner arrives with the measuring instrument, part 1; the open-loop one with part 2.
"""
