"""The capsule supervisor: PID 1 of the container (core.py), its control socket (server.py), and
the decision of which subsystems run and why (plan.py). `capsule supervise` is the entry point.
"""
