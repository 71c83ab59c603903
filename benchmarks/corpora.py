"""Where the benchmarks find their corpora: the ones shipped in the repo, plus ../shared/corpus if present.

Not responsible for reading cases (corpus_cases.py does) nor for making them
(benchmarks/corpus/make_corpus.py does).
Invariant: every benchmark runs from a plain clone; an external corpus only adds rows.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# dev: tune on it; holdout: check only; fresh: measured once by the lead, never tuned (benchmarks/corpus/README.md)
SHIPPED = {name: REPO / "benchmarks" / "corpus" / name for name in ("dev", "holdout", "fresh")}
READ_FAMILIES = {"read"}                 # bounded views: every line must survive
AGENT_READ_FAMILIES = {"read", "read_cat"}


def _main_checkout() -> Path:
    """The main checkout when REPO is a git worktree (its .git is a file naming .git/worktrees/NAME)."""
    dot_git = REPO / ".git"
    if dot_git.is_file():
        line = dot_git.read_text().strip()
        if line.startswith("gitdir:"):
            gitdir = Path(line.split(":", 1)[1].strip())
            if gitdir.parent.name == "worktrees":
                return gitdir.parent.parent.parent
    return REPO


def shared_corpus() -> Path | None:
    """../shared/corpus next to the repository (or next to its main checkout), if it exists."""
    for base in (REPO, _main_checkout()):
        cand = base.parent / "shared" / "corpus"
        if cand.is_dir():
            return cand
    return None


def default_corpora(with_shared: bool = True) -> list[tuple[str, Path]]:
    """(source name, folder) for every corpus a benchmark uses by default."""
    out = [(name, p) for name, p in SHIPPED.items() if p.is_dir()]
    shared = shared_corpus() if with_shared else None
    if shared:
        out.insert(0, ("shared", shared))
    return out
