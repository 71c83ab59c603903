#!/usr/bin/env bash
# Install the real agent clients the tests drive (Claude Code, Codex, OpenCode, Gemini CLI, MCP Inspector).
# The agent CLIs at the versions pinned in image/agent-clis.toml (the offline image copies
# these installs in), each client's other tested releases apart (npm --prefix: the newest's hook
# events, the benchmark matrix); the MCP Inspector at any version. Idempotent. Needs npm (Node >= 18).
# Not responsible for Python deps (pip install -e '.[test]') or for network beyond the npm registry.
set -euo pipefail

need() {  # need BIN PACKAGE
  local bin="$1" pkg="$2"
  if command -v "$bin" >/dev/null 2>&1; then
    echo "setup-clients: $bin present ($(command -v "$bin"))"
    return 0
  fi
  echo "setup-clients: installing $pkg"
  npm install -g --no-fund --no-audit "$pkg" >/dev/null
  [ -n "${CAPSULE_SETUP_LOG:-}" ] && echo "npm install -g $pkg" >>"$CAPSULE_SETUP_LOG"
  command -v "$bin" >/dev/null 2>&1 || { echo "setup-clients: $pkg installed but $bin not on PATH" >&2; exit 1; }
}

command -v npm >/dev/null 2>&1 || { echo "setup-clients: npm not found; install Node.js >= 18 first (apt-get install nodejs npm)" >&2; exit 1; }
PY="${PYTHON:-python3}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# the pinned agent CLIs: installed when absent or at another version
mapfile -t pinned < <("$PY" "$ROOT/image/agent_clis.py" missing)
for spec in "${pinned[@]}"; do
  [ -n "$spec" ] || continue
  echo "setup-clients: installing $spec (pinned in image/agent-clis.toml)"
  npm install -g --no-fund --no-audit "$spec" >/dev/null
  [ -n "${CAPSULE_SETUP_LOG:-}" ] && echo "npm install -g $spec" >>"$CAPSULE_SETUP_LOG"
done
left="$("$PY" "$ROOT/image/agent_clis.py" missing)"
[ -z "$left" ] || { echo "setup-clients: still not on PATH at the pinned version: $left" >&2; exit 1; }
# the other tested releases (capsule/agents/data/clients/<name>.toml `tested`: oldest, newest), each in a prefix
# of its own ($CAPSULE_CLIENTS_DIR, default ~/.cache/capsule/clients), for the tests that need the
# newest client's features and benchmarks/bench_agents.py --matrix
while read -r cmd spec prefix; do
  [ -n "$cmd" ] || continue
  if [ -x "$prefix/node_modules/.bin/$cmd" ]; then
    echo "setup-clients: $spec present ($prefix)"
    continue
  fi
  echo "setup-clients: installing $spec into $prefix (a tested release beside the pin)"
  npm install --prefix "$prefix" --no-fund --no-audit "$spec" >/dev/null
  [ -n "${CAPSULE_SETUP_LOG:-}" ] && echo "npm install --prefix $prefix $spec" >>"$CAPSULE_SETUP_LOG"
  [ -x "$prefix/node_modules/.bin/$cmd" ] || { echo "setup-clients: $spec installed but $prefix/node_modules/.bin/$cmd missing" >&2; exit 1; }
done < <("$PY" "$ROOT/image/agent_clis.py" matrix)
need mcp-inspector @modelcontextprotocol/inspector
