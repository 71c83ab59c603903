"""The ground floor: plain facts every layer may use (switch and env names, paths, token counting,
logging, error and value types).

Not responsible for any behaviour of a layer above it. Invariant: nothing here imports any other
part of capsule; tests/test_layers.py fails the build if it does.
"""
