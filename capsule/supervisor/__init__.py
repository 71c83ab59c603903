"""The capsule supervisor: PID 1 of the container. Its tini-sized core (pid1.py: spawn, forward
signals, reap, exit with the agent's status), the orchestration around it (core.py, with
subsystems.py, launch.py, log_setup.py) and its control socket (server.py); which subsystems run and
why is policy/plan.py. `capsule supervise` is the entry point.
"""
