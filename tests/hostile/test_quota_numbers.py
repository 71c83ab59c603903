"""Quota and routing numbers from outside (issue 31): rate-limit headers and Codex events carrying
nan, inf, 1e300 or a 400-digit reset are stored finite and in range or not at all; `ctx quota` and
its --json keep working (strict JSON) even over rows stored before that rule; a nan in one window
does not drop its neighbours; a 429 with any reset still gets x-should-retry: false and its notice;
a bad --role is one line, exit 2; a role's nan is refused; quota.db and route events have a retention
and `ctx quota` reads bounded data."""

from __future__ import annotations

import json
import logging
import math
import re
import time

import apsw
import httpx2
import pytest

from tests.fakes.cache import TimedCacheMessages
from tests.hostile.hostile_numbers import classic, header_sets, rejections

from capsule.measure.transcripts import codex_transcript
from capsule.route import quota
from capsule.store.route_rows import RouteLog, read
from capsule.proxy.app import Settings
from capsule.route.conversations import RouteSide
from capsule.proxy.proxy_server import ProxyServer
from capsule.store import retention

DAY = 86400.0


def _strict(text: str):
    def refuse(name):
        raise AssertionError(f"non-JSON constant {name} in the output")

    return json.loads(text, parse_constant=refuse)


def _sane(s: quota.Sample) -> bool:
    nums = [s.ts, s.utilization] + ([s.resets_at] if s.resets_at is not None else [])
    return all(math.isfinite(x) for x in nums) and 0 <= s.utilization <= quota.MAX_UTILIZATION and (
        s.resets_at is None or 0 <= s.resets_at <= quota.TIME_MAX)


def test_every_hostile_header_set_gives_only_finite_bounded_samples(state_dir):
    store = quota.QuotaStore(state_dir / "quota.db")
    for label, api, headers in header_sets():
        samples = quota.from_headers(api, headers, f"{api}:x", "api_key", "S")
        assert all(_sane(s) for s in samples), (label, samples)
        store.add(samples)      # a NaN would fail the NOT NULL column and lose the whole batch
    store.close()


def test_a_nan_limit_drops_only_its_own_window():
    samples = quota.from_headers("anthropic", classic("nan"), "anthropic:x", "api_key", "S")
    assert {s.window for s in samples} == {"input-tokens", "output-tokens"}, samples


def test_codex_rate_limit_events_with_hostile_numbers_are_bounded():
    for v in (math.inf, -math.inf, math.nan, 1e300, -1e300, 10 ** 400):
        ev = {"rate_limits": {"primary": {"used_percent": v, "window_minutes": 300, "resets_at": 1.9e9},
                              "secondary": {"used_percent": 10.0, "window_minutes": v, "resets_in_seconds": v}}}
        samples = codex_transcript.from_codex_event(ev, "openai:x", "S", time.time())
        assert all(_sane(s) for s in samples) and samples, (v, samples)


def _hostile_rows(path, now):
    """Rows as a build before issue 31 stored them: the numbers exactly as the headers said."""
    quota.QuotaStore(path).close()
    con = apsw.Connection(str(path))
    for i, (u, r) in enumerate([(1e300, 1e300), (math.inf, None), (0.5, 1e400), (0.5, -1e30), (0.4, now + 3600)]):
        con.execute("INSERT INTO quota_samples(ts, account, regime, api, window, utilization, status, resets_at, "
                    "session, source) VALUES(?,?,?,?,?,?,?,?,?,?)",
                    (now - 60 + i, "anthropic:x", "subscription", "anthropic", "5h", u, "allowed", r, "S", "proxy"))
    con.close()


def test_ctx_quota_survives_hostile_samples_old_and_new(state_dir, capsule):
    now = time.time()
    _hostile_rows(state_dir / "quota.db", now)
    side = RouteSide(state_dir)
    for _label, api, headers in header_sets():
        side.on_response(api, 200, headers, {"x-api-key": "sk-test"}, "S")
    side.close()
    for _ in range(2):                               # "every later call" died before
        text = capsule("ctx", "quota")
        assert text.returncode == 0 and b"Traceback" not in text.stderr, text.stderr.decode()[-800:]
    js = capsule("ctx", "quota", "--json")
    assert js.returncode == 0, js.stderr.decode()[-800:]
    q = _strict(js.stdout.decode())
    assert q["windows"] and all(0 <= w["utilization"] <= quota.MAX_UTILIZATION for w in q["windows"])


@pytest.mark.parametrize("value", ["1e30", "nan", "1e400", "-1e30", "9" * 400, "inf"])
def test_a_429_with_any_reset_is_rejected_and_noticed(state_dir, value, caplog):
    side = RouteSide(state_dir)
    try:
        for headers in rejections(value):
            with caplog.at_level(logging.WARNING, logger="capsule.proxy"):
                assert side.on_response("anthropic", 429, headers, {"x-api-key": "sk-test"}, "S") is True
    finally:
        side.close()
    assert any("rate limit reached" in r.getMessage() for r in caplog.records)
    assert [e for e in read(state_dir / "ledger.db") if e["kind"] == "notice"]


def test_the_proxy_says_do_not_retry_whatever_the_reset(tmp_path):
    values = ["1e30", "nan", "1e400", "-1e30"]
    fake = TimedCacheMessages(ratelimit=lambda n: rejections(values[n % len(values)])[2], status=lambda n: 429)
    server = ProxyServer(Settings(state_dir=tmp_path, anthropic_upstream=fake.url)).start()
    try:
        for i in range(len(values)):
            body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": f"hi {i}"}]}
            r = httpx2.post(server.url + "/v1/messages", content=json.dumps(body).encode(), timeout=30,
                            headers={"content-type": "application/json", "x-api-key": "sk-test",
                                     "x-claude-code-session-id": f"S{i}"})
            assert r.status_code == 429 and r.headers.get("x-should-retry") == "false", (values[i], r.headers)
    finally:
        server.stop()
        fake.close()


def test_ctx_quota_with_a_bad_role_is_one_line_exit_2(capsule, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("schema = 1\n[nonsense\n")
    r = capsule("ctx", "quota", "--role", str(bad))
    err = r.stderr.decode()
    assert r.returncode == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("key,value", [("degrade_at", "nan"), ("budget_usd_day", "nan"), ("budget_usd_session", "inf"),
                                       ("degrade_at", "-nan"), ("budget_usd_day", "+inf")])
def test_a_role_with_nan_or_inf_is_refused_with_its_line(tmp_path, key, value):
    from capsule.policy.manifest import ROLES_DIR, ManifestError, load_role

    text = re.sub(rf"(?m)^{key} = .*\n", "", (ROLES_DIR / "python-dev.toml").read_text())
    assert "[context.routing]\n" in text
    role = tmp_path / "r.toml"
    role.write_text(text.replace("[context.routing]\n", f"[context.routing]\n{key} = {value}\n", 1))
    with pytest.raises(ManifestError) as err:
        load_role(role)
    assert key in str(err.value) and "finite" in str(err.value) and "line" in str(err.value)


def test_quota_samples_and_route_events_have_a_retention(state_dir):
    now = time.time()
    store = quota.QuotaStore(state_dir / "quota.db")
    old = [quota.Sample(now - 100 * DAY + i, "a", "api_key", "anthropic", "tokens", 0.5) for i in range(300)]
    store.add(old + [quota.Sample(now - 60, "a", "api_key", "anthropic", "tokens", 0.6)])
    store.close()
    log = RouteLog(state_dir / "ledger.db")
    for i in range(50):
        log.record("boundary", session="S", reason="old", ts=now - 200 * DAY + i)
    log.record("boundary", session="S", reason="new", ts=now - 60)
    log.conn.close()
    out = retention.prune_all(state_dir)
    assert out["quota"]["deleted"] == 300 and out["ledger"]["deleted"] == 50, out
    assert [e["reason"] for e in read(state_dir / "ledger.db")] == ["new"]
    assert len(quota.QuotaStore(state_dir / "quota.db").samples(0.0)) == 1


def test_ctx_quota_reads_bounded_data(state_dir):
    """300k samples: a read returns the newest READ_ROWS, whatever the store holds."""
    now = time.time()
    quota.QuotaStore(state_dir / "quota.db").close()
    con = apsw.Connection(str(state_dir / "quota.db"))
    con.execute("BEGIN")
    con.execute("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 299999) "
                "INSERT INTO quota_samples(ts, account, regime, api, window, utilization, source) "
                "SELECT ?1 - 30 * 86400 + i * 8.64, 'a', 'api_key', 'anthropic', 'tokens', 0.5, 'proxy' FROM n", (now,))
    con.execute("COMMIT")
    con.close()
    store = quota.QuotaStore(state_dir / "quota.db")
    got = store.samples()
    store.close()
    newest = now - 30 * DAY + 299999 * 8.64
    assert len(got) == quota.READ_ROWS and got[-1].ts == pytest.approx(newest)
    assert got[0].ts == pytest.approx(newest - (quota.READ_ROWS - 1) * 8.64)
