"""Answer audit (seed 003's check_answer): distinctive tokens of an answer that appear only in
content a transform removed — the model "remembered" a row it never saw, or made one up.

Responsible for extracting distinctive tokens (ids, numbers, amounts, dates, paths, rare
identifiers and words), locating them in removed vs kept content, giving each a risk, and
rebuilding what the model saw by re-running the emission's transform with the context the
ledger stored (intent included). Not responsible for reading the ledger or the archive (the
CLI door does) nor for judging meaning. A heuristic, not a proof.
Invariant: a token that appears anywhere in the kept text is never flagged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

_TOKEN = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"                        # emails
    r"|\b[a-z][a-z0-9+.-]*://[^\s)>\]\"']+"               # URLs
    r"|(?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w.@-]+(?::\d+)*"   # paths (with :line)
    r"|\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?"  # dates
    r"|[$€£]?\b\d[\d,]*(?:\.\d+)?\b%?"                    # numbers and amounts
    r"|\b[A-Za-z_][\w-]*\w"                               # identifiers and words
)
_HEX = re.compile(r"^[0-9a-f]{7,}$")
_STOP = frozenset("""
about above after again against also although always among another answer around because been
before being below between both called cannot could does doing done down during each either
else enough error errors every example failed false first following found from further given
have having here however into itself just keep kept last later least less like line lines
look made make many maybe might more most much must need never none nothing null number other
otherwise output over perhaps please rather really result same seems should show shown since
some something still such than that their them then there these they thing things this those
though through true under unless until upon using value values very want were what when where
whether which while will with within without would your yours the and for are was not but
you all any can had her his how its may new now old one our out see two way who yes
""".split())


@dataclass
class Finding:
    token: str
    risk: str             # high | medium | low
    reason: str           # the removal it came from
    line: int | None = None

    def as_dict(self) -> dict:
        return {"token": self.token, "risk": self.risk, "reason": self.reason, "line": self.line}


@dataclass
class Audit:
    findings: list[Finding] = field(default_factory=list)
    checked: int = 0      # distinctive tokens looked at

    @property
    def risk(self) -> str:
        for level in ("high", "medium", "low"):
            if any(f.risk == level for f in self.findings):
                return level
        return "none"

    def as_dict(self) -> dict:
        return {"risk": self.risk, "checked": self.checked,
                "findings": [f.as_dict() for f in self.findings]}


def distinctive(text: str) -> list[str]:
    """Tokens worth checking, first occurrence order, no repeats."""
    out: list[str] = []
    seen: set[str] = set()
    for m in _TOKEN.finditer(text):
        tok = m.group(0).strip(".,;:")
        low = tok.lower()
        if not tok or low in seen:
            continue
        if tok[0].isalpha() and "_" not in tok and not any(c.isdigit() for c in tok) \
                and "/" not in tok and "@" not in tok:
            # a plain word: distinctive only when long, rare-looking or mixed case
            if low in _STOP or (len(tok) < 7 and not re.search(r"[a-z][A-Z]", tok)):
                continue
        if tok.replace(",", "").replace(".", "").isdigit() and len(tok.replace(",", "")) < 2:
            continue
        seen.add(low)
        out.append(tok)
    return out


def risk_of(token: str, removal_reason: str = "") -> str:
    """high: ids, amounts, dates, contact fields, hashes; medium: identifiers, paths and whole
    removed items; low: plain words and what duplicate/empty removals held."""
    r = removal_reason.lower()
    if "duplicate" in r or "blank" in r or "empty" in r:
        return "low"
    if "@" in token or _HEX.match(token.lower()) or re.match(r"^\d{4}-\d{2}-\d{2}", token) \
            or re.match(r"^[$€£]?\d[\d,]*\.\d+$", token) or re.match(r"^\d{3,}$", token.replace(",", "")) \
            or re.search(r"[A-Za-z]+[-_]?\d{2,}", token):
        return "high"
    if any(c.isdigit() for c in token) or "/" in token or "_" in token or "." in token \
            or re.search(r"[a-z][A-Z]", token):
        return "medium"
    return "low"


def _contains(haystack_low: str, token: str) -> bool:
    tok = token.lower()
    if re.match(r"^[\w]", tok) and re.search(r"\w$", tok):
        return re.search(r"(?<![\w])" + re.escape(tok) + r"(?![\w])", haystack_low) is not None
    return tok in haystack_low


def check_answer(answer: str, removed: list[tuple[str, str, int | None]], kept_text: str) -> Audit:
    """removed: (content, removal reason, first line) for every removed piece (a preview or
    the original lines the removal covered). kept_text: what the model received."""
    kept_low = kept_text.lower()
    pieces = [(c.lower(), reason, line) for c, reason, line in removed if c]
    audit = Audit()
    for tok in distinctive(answer):
        audit.checked += 1
        if _contains(kept_low, tok):
            continue
        for content, reason, line in pieces:
            if _contains(content, tok):
                where = line
                if line is not None:
                    # the exact original line inside a multi-line piece
                    for k, ln in enumerate(content.split("\n")):
                        if _contains(ln, tok):
                            where = line + k
                            break
                audit.findings.append(Finding(tok, risk_of(tok, reason), reason, where))
                break
    return audit


def pieces_from(original: str | None, manifest: list[dict]) -> tuple[list[tuple[str, str, int | None]], str | None]:
    """(removed pieces, kept text or None) from an emission's manifest and, when the archive
    still holds it, its original: line-ranged removals take their original lines; the rest
    their previews. The kept text is the original without the ranged lines."""
    removed: list[tuple[str, str, int | None]] = []
    lines = original.split("\n") if original is not None else None
    covered: set[int] = set()
    for r in manifest:
        reason = r.get("reason", "")
        start, end = r.get("start"), r.get("end")
        if lines is not None and start and end and r.get("count", 0):
            chunk = lines[start - 1:end]
            covered.update(range(start - 1, min(end, len(lines))))
            removed.append(("\n".join(chunk), reason, start))
        elif r.get("preview"):
            removed.append((r["preview"], reason, start))
    kept = None
    if lines is not None:
        kept = "\n".join(ln for i, ln in enumerate(lines) if i not in covered)
    return removed, kept


def audit_emission(answer: str, row: dict, original: str | None,
                   rerun: Callable[[dict, str], str | None] | None = None) -> Audit:
    """check_answer for one ledger row: removed pieces from its manifest (and original, while
    archived); the kept text is `rerun(row, original)` (observe/rerun.py: the transform run again)
    when some removal has no line range, else the original without the removed lines."""
    manifest = row.get("manifest") or []
    removed, kept = pieces_from(original, manifest)
    if original is not None and any(not (r.get("start") and r.get("end")) for r in manifest):
        kept = (rerun(row, original) if rerun else None) or kept
    return check_answer(answer, removed, kept or "")
