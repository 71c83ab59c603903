"""capsule: the context engine and control plane of an agent container.

The engine is a library (one subpackage per layer); the CLI, the shims, the MCP
server and the supervisor are thin doors onto it.
"""

__version__ = "0.1.0"
