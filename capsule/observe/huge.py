"""The >16 MiB path: streaming passes over a spooled payload keeping every error-class match
anywhere (inside one huge line too, as a window around the match), the salient lines the bounded
template pass finds (huge_salience.py: a template seen once, a level above the dominant one, a
number far above its column's) with their neighbours, the first line of the commonest templates,
and a few first and last lines.

Not responsible for archiving, the footer or the ledger (engine.py), nor for payloads that fit in
memory (the pipeline).
Invariant: memory is bounded by CHUNK and the caps whatever the line lengths; every line shown
in part says so; each omitted run is one ranged marker (markers.py: kept + markers == total), and
the notes for the footer line count the bytes cut from shown lines.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from io import BufferedIOBase

from capsule.observe import huge_salience, markers

HEAD_LINES = 20
TAIL_LINES = 20
HIT_CAP = 200            # error-class windows shown at most (the rest are counted)
HITS_PER_LINE = 3        # windows shown from one line at most
LINE_CAP = 4096          # bytes of a head/tail line shown at most; a longer error line gets a window
EDGE_BUDGET = 16 << 10   # bytes shown of the head lines together, and of the tail lines (long lines
EDGE_LINE_MIN = 512      #   get less each, down to this): the error windows stay within a client cap
WINDOW_BUDGET = 48 << 10 # bytes of error lines/windows shown at most (further matches are counted)
WINDOW = 512             # bytes shown each side of an error match in a long line
CHUNK = 1 << 20
SALIENT_BUDGET = 16 << 10  # bytes of salient lines (huge_salience.py) and their neighbours shown at most
OVERLAP = 64             # bytes a match may straddle between chunks (the words are shorter)

VERBATIM_BYTES = re.compile(
    rb"(?i)\b(error|fatal|failed|failure|panic|exception|traceback|warning|denied|refused|segmentation fault)\b")


@dataclass
class Hit:
    start: int               # absolute offset of the match
    end: int
    line: int                # 0-based line number
    line_start: int
    line_end: int | None = None   # offset of the newline ending the line (None: not yet seen / EOF)


@dataclass
class Scan:
    size: int
    newlines: int = 0
    first_nl: list[int] = field(default_factory=list)     # offsets of the first HEAD_LINES newlines
    last_nl: deque = field(default_factory=lambda: deque(maxlen=TAIL_LINES + 1))
    hits: list[Hit] = field(default_factory=list)
    more_hits: int = 0

    @property
    def total_lines(self) -> int:
        ends_open = self.size and (not self.last_nl or self.last_nl[-1] < self.size - 1)
        return self.newlines + (1 if ends_open else 0)

    def nl(self, j: int) -> int:
        """Offset of newline j (0-based); only the first HEAD_LINES and the last TAIL_LINES+1 are known."""
        if j < len(self.first_nl):
            return self.first_nl[j]
        return self.last_nl[j - (self.newlines - len(self.last_nl))]

    def span(self, k: int) -> tuple[int, int]:
        """[start, end) of line k (0-based, its newline excluded): head and tail lines only."""
        start = self.nl(k - 1) + 1 if k else 0
        end = self.nl(k) if k < self.newlines else self.size
        return start, end


def scan(f: BufferedIOBase) -> Scan:
    """One chunked pass: the newline count and the newline offsets at both ends, and every
    error-class match outside the head's shown bytes, with its line (number, start, end)."""
    f.seek(0, 2)
    s = Scan(f.tell())
    f.seek(0)
    cap = HIT_CAP + (HEAD_LINES + TAIL_LINES) * HITS_PER_LINE   # hits the edges show are dropped later
    line_start = 0          # start offset of the line the current chunk begins in
    carry = b""             # the previous chunk's last OVERLAP bytes: matches starting there are ours
    offset = 0              # absolute offset of the current chunk
    pending: list[Hit] = []
    per_line: dict[int, int] = {}
    while chunk := f.read(CHUNK):
        if pending and (nl := chunk.find(b"\n")) >= 0:
            for h in pending:
                h.line_end = offset + nl
            pending = []
        buf = carry + chunk
        base = offset - len(carry)
        own_to = len(buf) if offset + len(chunk) >= s.size else len(buf) - OVERLAP
        cursor, cursor_nl, cursor_ls = len(carry), s.newlines, line_start
        for m in VERBATIM_BYTES.finditer(buf):
            if m.start() >= own_to:
                break
            if m.start() >= cursor:
                cursor_nl += buf.count(b"\n", cursor, m.start())
                last = buf.rfind(b"\n", cursor, m.start())
                if last >= 0:
                    cursor_ls = base + last + 1
                cursor = m.start()
                line, ls = cursor_nl, cursor_ls
            else:   # in the carried bytes: counted back from this chunk's start
                line = s.newlines - buf.count(b"\n", m.start(), len(carry))
                last = buf.rfind(b"\n", 0, m.start())
                ls = base + last + 1 if last >= 0 else max(
                    [x + 1 for x in s.last_nl if x < base + m.start()] or [line_start])
            start = base + m.start()
            if s.hits and s.hits[-1].line == line and start < s.hits[-1].end + WINDOW:
                continue    # inside the previous window
            if len(s.hits) >= cap or per_line.get(line, 0) >= HITS_PER_LINE:
                s.more_hits += 1
                continue
            per_line[line] = per_line.get(line, 0) + 1
            end_nl = buf.find(b"\n", m.end())
            hit = Hit(start, base + m.end(), line, ls, base + end_nl if end_nl >= 0 else None)
            s.hits.append(hit)
            if hit.line_end is None:
                pending.append(hit)
        if len(s.first_nl) < HEAD_LINES:
            pos = chunk.find(b"\n")
            while pos >= 0 and len(s.first_nl) < HEAD_LINES:
                s.first_nl.append(offset + pos)
                pos = chunk.find(b"\n", pos + 1)
        n = chunk.count(b"\n")
        if n:
            found, pos = [], len(chunk)
            while len(found) < TAIL_LINES + 1 and (pos := chunk.rfind(b"\n", 0, pos)) >= 0:
                found.append(offset + pos)
            s.last_nl.extend(reversed(found))
            line_start = s.last_nl[-1] + 1
        s.newlines += n
        carry = buf[-OVERLAP:]
        offset += len(chunk)
    return s


def _read(f: BufferedIOBase, start: int, n: int) -> bytes:
    f.seek(start)
    return f.read(n)


def summarise(f: BufferedIOBase) -> tuple[bytes, int, int, bytes]:
    """(body, lines not shown at all, bytes of shown lines not shown, notes for the footer line).
    The body shows each shown line once (its head/tail part and error windows joined) and one
    ranged marker per omitted run (markers.py)."""
    s = scan(f)
    total = s.total_lines
    head_n = min(HEAD_LINES, total)
    tail_from = max(head_n, total - TAIL_LINES)
    tail_ks = list(range(tail_from, total))
    shown: dict[int, list[tuple[int, int]]] = {}    # line -> shown byte ranges
    spans: dict[int, tuple[int, int]] = {}
    parts: dict[int, list[bytes]] = {}              # line -> what is shown of it, in order

    def show_line(k: int, cap: int) -> None:
        start, end = s.span(k)
        spans[k] = (start, end)
        n = min(end - start, cap)
        shown.setdefault(k, []).append((start, start + n))
        parts[k] = [_read(f, start, n) + (b"...[line cut]" if end - start > cap else b"")]

    head_cap = max(EDGE_LINE_MIN, min(LINE_CAP, EDGE_BUDGET // max(head_n, 1)))
    tail_cap = max(EDGE_LINE_MIN, min(LINE_CAP, EDGE_BUDGET // max(len(tail_ks), 1)))
    for k in range(head_n):
        show_line(k, head_cap)
    for k in tail_ks:
        show_line(k, tail_cap)
    budget, shown_hits = WINDOW_BUDGET, 0
    for h in s.hits:
        if any(a <= h.start and h.end <= b for a, b in shown.get(h.line, [])):
            continue    # the head or tail part, or an earlier window, shows it
        if shown_hits >= HIT_CAP or budget <= 0:
            s.more_hits += 1
            continue
        line_end = h.line_end if h.line_end is not None else s.size
        if line_end - h.line_start <= LINE_CAP:
            a, b = h.line_start, line_end
        else:
            a, b = max(h.line_start, h.start - WINDOW), min(line_end, h.end + WINDOW)
        if any(x <= a and b <= y for x, y in shown.get(h.line, [])):
            continue
        shown.setdefault(h.line, []).append((a, b))
        spans[h.line] = (h.line_start, line_end)
        data = _read(f, a, b - a)
        budget -= len(data)
        shown_hits += 1
        if (a, b) == (h.line_start, line_end):
            parts.setdefault(h.line, []).append(data)
        else:
            parts.setdefault(h.line, []).append(
                (b"..." if a > h.line_start else b"") + data + (b"..." if b < line_end else b"")
                + f" [line {h.line + 1}, bytes {a - h.line_start}-{b - h.line_start} of {line_end - h.line_start}]".encode())
    _salient_lines(f, total, parts, shown, spans)
    removed_lines = total - len(parts)
    cut_bytes = sum(max(0, (spans[k][1] - spans[k][0]) - sum(b - a for a, b in _merge(r)))
                    for k, r in shown.items())
    out: list[bytes] = []
    prev = -1
    for k in sorted(parts) + [total]:
        if k > prev + 1:
            out.append(markers.marker(k - prev - 1, prev + 2, k).encode())
        if k < total:
            out.append(b" ".join(parts[k]))
        prev = k
    notes = []
    if cut_bytes:
        partial = sum(1 for k, r in shown.items() if sum(b - a for a, b in _merge(r)) < spans[k][1] - spans[k][0])
        notes.append(f"[{cut_bytes} bytes not shown from {partial} long line{'s' if partial != 1 else ''}]")
    if s.more_hits:
        notes.append(f"[{s.more_hits} more error/warning matches beyond those shown: capsule ctx expand HASH --grep]")
    return b"\n".join(out) + b"\n", removed_lines, cut_bytes, " ".join(notes).encode()


def _salient_lines(f: BufferedIOBase, total: int, parts: dict, shown: dict, spans: dict) -> None:
    """Add the spool's salient lines (huge_salience.py) with a neighbour each side, then the first
    line of its commonest templates, while SALIENT_BUDGET lasts."""
    table = huge_salience.count(f)
    keys, firsts = table.salient()
    if any(table.counts[k] > 1 for k in keys):
        rare = huge_salience.find(f, keys)
    else:
        rare = sorted(table.first[k] for k in keys)[:huge_salience.SALIENT_CAP]
    order = list(rare)
    for i in rare:
        order += [j for j in (i - 1, i + 1) if 0 <= j < total]
    order += firsts
    order = [k for k in dict.fromkeys(order) if k not in parts]
    got = huge_salience.fetch(f, order, LINE_CAP)
    budget = SALIENT_BUDGET
    for k in order:
        if k not in got or budget <= 0:
            continue
        data, n = got[k]
        budget -= len(data)
        parts[k] = [data + (b"...[line cut]" if n > len(data) else b"")]
        spans[k] = (0, n)
        shown[k] = [(0, len(data))]


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
