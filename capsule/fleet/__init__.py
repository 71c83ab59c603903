"""The fleet: one schema with the local stores (schema, migrations), `capsule fleet sync` from state
volumes into PostgreSQL, fleet reports, and compose / Kubernetes renderings of scaled-out roles.

Not imported by the engine or any door: only the CLI's `fleet` commands load it (INV-10: the
capsule never connects out; the fleet side reads its state).
"""
