"""Shortcuts a cold `ctx run` takes instead of a stdlib call read the same as the call they replace."""

import random
from datetime import datetime

from capsule.observe.filters.git_stream import _short_date


def _strptime_reading(value: str) -> str:
    try:
        return datetime.strptime(value.strip(), "%a %b %d %H:%M:%S %Y %z").strftime("%Y-%m-%d")
    except ValueError:
        return value.strip()


def test_git_dates_read_as_strptime_reads_them():
    rnd = random.Random(11)
    days = ["Mon", "Tue", "Sun", "mon", "Tuesday"]
    months = ["Jan", "Feb", "Jun", "Dec", "dec", "Foo"]
    seen_fast = 0
    for _ in range(5000):
        day = rnd.choice([str(rnd.randint(0, 40)), f"{rnd.randint(0, 35):02d}", f" {rnd.randint(1, 9)}"])
        clock = ":".join(rnd.choice([f"{rnd.randint(0, 99):02d}", str(rnd.randint(0, 9))]) for _ in range(3))
        year = rnd.choice([str(rnd.randint(1, 9999)), f"{rnd.randint(0, 9999):04d}", "2026"])
        zone = rnd.choice(["+0000", "-0700", f"{rnd.choice('+-')}{rnd.randint(0, 9999):04d}", "Z", "+05:30", ""])
        value = rnd.choice([" ", "  "]).join([rnd.choice(days), rnd.choice(months), day, clock, year, zone])
        assert _short_date(value) == _strptime_reading(value), value
        seen_fast += _short_date(value) != value.strip()
    assert seen_fast > 500     # the generator reaches valid dates, not only the fallback
    assert _short_date("Tue Dec 1 08:34:30 2026 +0000") == "2026-12-01"
    assert _short_date("Mon Feb 30 08:34:30 2026 +0000") == "Mon Feb 30 08:34:30 2026 +0000"
