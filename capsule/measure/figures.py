"""FIGURES: the one definition of each headline figure every report shows (ctx report text, JSON and
HTML, fleet report), so the same rows give the same names and numbers everywhere.

gross saved  = raw minus emitted tokens over the ledger's rows (`ctx gain`'s TOTAL saved; the
               footers capsule adds are inside `emitted`, so gross is already net of them);
standing     = capsule's standing context, once per agent session that used capsule (transcripts);
bounces      = tokens that came back (expands, re-runs after a lossy emission; transcripts);
net saved    = gross saved - standing - bounces;
session cost = the agents' calls priced (transcripts).
Not responsible for computing the parts (ledger.summarise, savings, summary). Invariant: a figure
that needs the agents' transcripts is None when none were read, with `note` saying what fills it;
never a 0 that reads as "nothing saved".
"""

from __future__ import annotations

NO_TRANSCRIPTS = ("net saved and session cost need the agents' transcripts and none were read: run the agent "
                  "under `capsule up`, or pass --claude-dir / --codex-dir")


def figures(gain_total: dict, savings_totals: dict, usage_totals: dict) -> dict:
    """gain_total: ledger.summarise(rows)["total"]; savings_totals: savings.totals(); usage_totals:
    summary.totals() (or their sums over a fleet group)."""
    transcripts = bool(usage_totals.get("calls"))
    gross = gain_total["raw_tokens"] - gain_total["emitted_tokens"]
    standing, bounces = savings_totals["added_tokens"], savings_totals["bounce_tokens"]
    return {
        "gross_saved_tokens": gross,
        "gross_saved_pct": round(100.0 * gross / gain_total["raw_tokens"], 1) if gain_total["raw_tokens"] else 0.0,
        "raw_tokens": gain_total["raw_tokens"],
        "emissions": gain_total["emissions"],
        "would_save_tokens": gain_total["would_save_tokens"],
        "footer_tokens": savings_totals["footer_tokens"],
        "standing_tokens": standing if transcripts else None,
        "bounce_tokens": bounces if transcripts else None,
        "net_saved_tokens": gross - standing - bounces if transcripts else None,
        "session_cost_usd": usage_totals.get("cost_usd") if transcripts else None,
        "transcripts": transcripts,
        "note": None if transcripts else NO_TRANSCRIPTS,
    }


def _n(v) -> str:
    return "n/a" if v is None else f"{v:,}"


def lines(f: dict) -> list[str]:
    """The figures as the terminal reports print them (ctx report and fleet report alike)."""
    cost = "n/a" if f["session_cost_usd"] is None else f"${f['session_cost_usd']:.4f}"
    out = [f"  gross saved {f['gross_saved_tokens']:,} tokens ({f['gross_saved_pct']:.1f}% of {f['raw_tokens']:,} "
           f"raw, {f['emissions']:,} emissions)"
           + (f"; measure-only: would save {f['would_save_tokens']:,} more" if f["would_save_tokens"] else ""),
           f"  net saved {_n(f['net_saved_tokens'])} (gross minus standing context {_n(f['standing_tokens'])} "
           f"minus bounces {_n(f['bounce_tokens'])}); session cost {cost}"]
    if f["note"]:
        out.append(f"  ({f['note']})")
    return out
