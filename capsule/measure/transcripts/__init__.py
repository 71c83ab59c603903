"""Per-agent transcript readers: claude (Claude Code JSONL), codex (Codex rollouts)."""
