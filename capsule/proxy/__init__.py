"""The proxy door: a local HTTP proxy for the Anthropic Messages and OpenAI Responses APIs.

Tool results the model is about to read go through the same engine as the shims, once, memoized
per conversation so every later request carries the same bytes (INV-1); usage is read from the
upstream's own answers. Everything it cannot understand passes through untouched (fail open).
"""
