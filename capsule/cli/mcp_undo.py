"""What `capsule mcp register` changed, kept so `capsule mcp unregister` can put every file back
byte for byte (content and mode), and remove the files and folders it created.

Not responsible for the registration itself (capsule.agents). Invariant: the first original of a
file is kept across repeated registrations; a file the user changed after capsule last wrote it is
left as it is (named, never overwritten), so unregister never loses the user's edits.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

from capsule.agents import claude, codex, notes
from capsule.ground import paths

RECORD = "registrations.json"


def candidates(agent: str, scope: str | None, project: Path, note, env) -> list[Path]:
    """Every file `agents.register` may write for these arguments."""

    if agent == "claude":
        out = ([project / ".mcp.json", project / ".claude" / "settings.local.json"] if scope == "project" else
               [claude.user_config_path(env), claude.config_dir(env) / "settings.json"])
    else:
        out = [codex.config_path(env)]
    if note:
        out.append(notes.user_file(agent, env) if note == "user" else project / notes.FILES[agent])
    return out


def snapshot(files: list[Path]) -> dict:
    """Each file's bytes and mode (None: absent), and the folders on the way that do not exist yet."""
    out = {}
    for f in files:
        try:
            out[str(f)] = {"bytes": base64.b64encode(f.read_bytes()).decode(), "mode": f.stat().st_mode & 0o7777}
        except FileNotFoundError:
            missing = [str(d) for d in [f.parent, *f.parent.parents] if not d.exists()]
            out[str(f)] = {"bytes": None, "mode": None, "dirs": missing}
    return out


def _sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def _load() -> dict:
    try:
        return json.loads((paths.state_dir() / RECORD).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}


def remember(agent: str, before: dict) -> None:
    """After a registration: for each file it changed, its first original and what capsule wrote."""
    record = _load()
    mine = record.setdefault(agent, {})
    for name, was in before.items():
        now = _sha(Path(name))
        if now is None or (was["bytes"] is not None and hashlib.sha256(base64.b64decode(was["bytes"])).hexdigest() == now):
            continue                               # untouched by this registration
        entry = mine.setdefault(name, was)         # the first original stays
        entry["written"] = now
    paths.write_private(paths.state_dir() / RECORD, json.dumps(record, indent=2, sort_keys=True))


def undo(agent: str) -> list[str]:
    """Put back every file the registrations of `agent` changed; one line per file."""
    record = _load()
    mine = record.get(agent, {})
    lines, kept = [], {}
    for name, entry in sorted(mine.items()):
        path = Path(name)
        if _sha(path) != entry.get("written"):
            lines.append(f"{agent}: {path} changed since capsule wrote it; left as it is (remove capsule's entry by hand)")
            kept[name] = entry
            continue
        if entry["bytes"] is None:
            path.unlink(missing_ok=True)
            for d in entry.get("dirs", []):        # innermost first: only the empty folders capsule made
                try:
                    os.rmdir(d)
                except OSError:
                    break
            lines.append(f"{agent}: removed {path} (capsule created it)")
        else:
            tmp = path.with_name(f".{path.name}.capsule-restore")
            tmp.write_bytes(base64.b64decode(entry["bytes"]))
            os.chmod(tmp, entry["mode"])
            os.replace(tmp, path)
            lines.append(f"{agent}: restored {path}")
    if kept:
        record[agent] = kept
    else:
        record.pop(agent, None)
    paths.write_private(paths.state_dir() / RECORD, json.dumps(record, indent=2, sort_keys=True))
    return lines or [f"{agent}: nothing to undo (no registration recorded in {paths.state_dir() / RECORD})"]
