"""Backends: server lifecycles for llama.cpp (the embedded default), vLLM and existing endpoints.

Nothing is registered yet: a backend is registered only once it really starts, checks and stops
its server. They arrive with ``arena run``.
"""
