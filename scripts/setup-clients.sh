#!/usr/bin/env bash
# Install the real agent clients the read-door tests drive (Claude Code CLI, MCP Inspector).
# Idempotent: a client already on PATH at any version is left alone. Needs npm (Node >= 18).
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
need claude @anthropic-ai/claude-code
need mcp-inspector @modelcontextprotocol/inspector
need codex @openai/codex
