"""Fingerprint every emission the engine makes on the corpora, to show a refactor changed none.

    python benchmarks/emission_digest.py OUT.json            # write {case: digest} for this checkout
    python benchmarks/emission_digest.py --compare A.json B.json

Each corpus case runs twice (without and with its intent), then once more through a Claude Code
client cap (the fit stage), plus a payload with a 2 MB line through the spooled path (huge.py).
A digest covers the emitted bytes and the ledger row's figures (transform, tokens, manifest).
Not responsible for judging the emissions (bench_corpus.py does). Invariant: same code, same digests.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from corpora import default_corpora  # noqa: E402
from corpus_cases import load_case  # noqa: E402

ROW_KEYS = ("transform", "family", "applied", "raw_tokens", "emitted_tokens", "raw_bytes", "emitted_bytes",
            "would_emit_tokens", "token_label", "manifest", "handle", "stream", "intent")
CLAUDE = {"CLAUDECODE": "1", "BASH_MAX_OUTPUT_LENGTH": "6000"}


def _api():
    """(observe one stream, observe a command's two streams for a client, observe a spool) for this checkout."""
    try:
        from capsule.ground.types import Observation  # the door contract (issue 23)
        from capsule.shims import door

        return (lambda e, raw, **kw: e.observe(Observation(raw, **kw)),
                lambda e, cmd, out, err, code, meta: door.observe_command(e, cmd, out, err, code, 1.0, "bench", meta=meta),
                lambda e, f, size, **kw: e.observe(Observation(spool=f, size=size, digest="d" * 24, **kw)))
    except ImportError:    # before it: three entry points
        return (lambda e, raw, **kw: e.observe(raw, **kw),
                lambda e, cmd, out, err, code, meta: e.observe_command(cmd, out, err, code, 1.0, "bench", meta=meta),
                lambda e, f, size, **kw: e.observe_file(f, size, "d" * 24, **kw))


def _digest(engine, data: bytes, emission_id) -> str:
    row = engine.ledger.get(emission_id) if emission_id else None
    fields = {k: (row or {}).get(k) for k in ROW_KEYS}
    return hashlib.sha256(data + json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _last_id(engine):
    rows = engine.ledger.rows()
    return rows[-1]["id"] if rows else None


def fingerprint() -> dict[str, str]:
    from capsule.engine import Engine

    one, command, spooled = _api()
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as state:
        engine = Engine(Path(state), mode="standard", scope="bench")
        for name, corpus in default_corpora():
            for folder in sorted(p for p in corpus.iterdir() if (p / "output.txt").exists()):
                case = load_case(folder)
                for intent in (None, case["intent"]) if case["intent"] else (None,):
                    em = one(engine, case["output"], command=case["command"], exit_code=case["exit_code"],
                             intent=intent)
                    out[f"{name}/{case['case']}/{'intent' if intent else 'plain'}"] = _digest(engine, em.data, em.emission_id)
                data, _ = command(engine, case["command"] or "cat out.txt", case["output"], b"", case["exit_code"], CLAUDE)
                out[f"{name}/{case['case']}/claude"] = _digest(engine, data, _last_id(engine))
        blob = (b"x" * (2 << 20)) + b"\nERROR: the end\n"
        em = spooled(engine, io.BytesIO(blob), len(blob), command="cat blob", stream="stdout", exit_code=1)
        out["synthetic/long-line"] = _digest(engine, em.data, em.emission_id)
        engine.close()
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--compare"] and len(argv) == 3:
        a, b = (json.loads(Path(p).read_text()) for p in argv[1:])
        differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        print(f"{len(a)} vs {len(b)} emissions; {len(differ)} differ")
        for k in differ:
            print(f"  {k}: {a.get(k)} -> {b.get(k)}")
        return 1 if differ else 0
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    prints = fingerprint()
    Path(argv[0]).write_text(json.dumps(prints, indent=1, sort_keys=True) + "\n")
    print(f"{len(prints)} emissions fingerprinted -> {argv[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
