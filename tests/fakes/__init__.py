"""Scripted fake model APIs on 127.0.0.1 for the tests and benchmarks: one Anthropic Messages fake
(anthropic.py), one OpenAI Responses fake (openai.py), their cache-modelling variants (cache.py) and
a canned-bytes upstream (http.py). Not models: each answer comes from a script.

Invariant: every fake records what it received (parsed bodies, and path, headers and raw bytes) before
it answers, streams SSE the way the real clients parse it, and binds port 0 on its host.
"""
