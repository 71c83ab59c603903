"""The one redaction pass applied to a stream (issue 31: a live `ctx run`'s journal held raw secrets).
Whatever the chunking (a byte at a time, random cuts, a secret cut mid-token, a key wrapped across
lines arriving late, a PEM key split mid-body), no secret comes out, the bytes around it come out
exactly, every byte comes out once, and a 64 MiB-style line is never held whole. The cheap
may_hold_secret() test that lets a small output skip loading the patterns says yes to every form."""

from __future__ import annotations

import random

import pytest

from capsule.store import redact
from capsule.store.redact_stream import CONTEXT, StreamRedactor
from tests.store.test_secret_forms import FORMS, GHP

PEM = ("-----BEGIN PRIVATE KEY-----\n"
       "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n"
       "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu\n"
       "-----END PRIVATE KEY-----\n")
PEM_LINES = PEM.splitlines()[1:3]
SAK = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
LOG = "".join(f"step {i}: compiled module_{i}.o in {i % 7}.{i % 10}s\n" for i in range(60))


def _stream(data: bytes, cuts: list[int], **kw) -> tuple[bytes, int]:
    """Feed `data` cut at `cuts`, taking what is ready after each piece; (output, most bytes held)."""
    r = StreamRedactor(**kw)
    out, at, most = [], 0, 0
    for c in [*cuts, len(data)]:
        r.feed(data[at:c])
        most = max(most, r.held())
        out.append(r.ready())
        at = c
    out.append(r.rest())
    return b"".join(out), most


def _random_cuts(n: int, seed: int, max_piece: int = 300) -> list[int]:
    rng = random.Random(seed)
    cuts, at = [], 0
    while True:
        at += rng.randint(1, max_piece)
        if at >= n:
            return cuts
        cuts.append(at)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_each_secret_form_is_redacted_however_the_stream_is_cut(name):
    text, secrets, kept = FORMS[name]
    data = (LOG + text + "\n" + LOG).encode()
    for seed in range(4):
        out, _ = _stream(data, _random_cuts(len(data), seed, 30 if seed == 0 else 300))
        got = out.decode()
        assert "[capsule redacted: " in got, (name, seed)
        for s in secrets:
            assert s not in got, (name, seed, s)
        for k in kept:
            assert k in got, (name, seed, k)
        assert got.startswith(LOG) and got.endswith(LOG), (name, seed)      # every other byte exactly
    assert redact.may_hold_secret(text), name            # the cheap test never says no to a secret


def test_a_byte_at_a_time_gives_what_the_whole_text_gives():
    text = (LOG + f"export AWS_SECRET_ACCESS_KEY={SAK}\n" + PEM + f"token {GHP}\n" + LOG).encode()
    out, _ = _stream(text, list(range(1, len(text))))
    assert out == redact.redact_bytes(text)[0]
    assert SAK.encode() not in out and GHP.encode() not in out and all(p.encode() not in out for p in PEM_LINES)


def test_a_pem_key_split_mid_body_waits_for_its_end():
    data = ("build ok\n" + PEM + "after\n").encode()
    cut = data.index(b"MzEf") + 10
    r = StreamRedactor()
    r.feed(data[:cut])
    first = r.ready()
    assert first == b"build ok\n"                     # the key's lines wait for -----END
    r.feed(data[cut:])
    out = first + r.ready() + r.rest()
    assert b"-----BEGIN PRIVATE KEY-----" in out and b"after\n" in out
    assert all(p.encode() not in out and p[:20].encode() not in out for p in PEM_LINES)


def test_a_token_wrapped_onto_a_line_that_comes_later_is_redacted_there_too():
    first = f"GITHUB_TOKEN={GHP[:20]}\n".encode()
    r = StreamRedactor()
    r.feed(first)
    out = r.ready()
    assert GHP[:20].encode() not in out and out.endswith(b"]\n")
    r.feed(f"{GHP[20:]}\nok\n".encode())
    out += r.ready() + r.rest()
    assert GHP[20:].encode() not in out and out.endswith(b"\nok\n")


def test_a_partial_line_waits_and_a_token_cut_mid_way_is_redacted_whole():
    r = StreamRedactor()
    r.feed(f"token {GHP[:9]}".encode())
    assert r.ready() == b"" and r.held() == 6 + 9        # no newline yet: nothing can be written
    r.feed(f"{GHP[9:]} done\n".encode())
    out = r.ready()
    assert out == b"token [capsule redacted: github-token] done\n" and r.held() == 0


def test_an_endless_line_is_written_in_bounded_pieces_cut_between_tokens():
    line_max = 16 << 10
    word = b"segment-0123456789abcdef "                      # separators every 25 bytes
    body = word * (3 * line_max // len(word))
    data = body + f"secret_key={SAK} ".encode() + body + b"\n"
    chunk = 4096
    out, most = _stream(data, list(range(chunk, len(data), chunk)), line_max=line_max)
    assert most <= line_max + chunk                           # never held whole
    assert SAK.encode() not in out and out.count(word) == 2 * body.count(word)
    blob = bytes(random.Random(5).choice(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijkl0123456789") for _ in range(3 * line_max))
    out, most = _stream(blob + b"\n", list(range(chunk, len(blob), chunk)), line_max=line_max)
    assert most <= line_max + chunk and out == blob + b"\n"   # no separator at all: cut at the bound, bytes kept


def test_non_utf8_bytes_and_the_no_redact_switch_pass_exactly(monkeypatch):
    data = b"\xff\xfe binary \x80 line\n" + f"token {GHP}\n".encode() + b"\xc3"
    out, _ = _stream(data, _random_cuts(len(data), 3, 5))
    assert out == b"\xff\xfe binary \x80 line\ntoken [capsule redacted: github-token]\n\xc3"
    monkeypatch.setenv("JACKIN_CTX_NO_REDACT", "1")
    assert _stream(data, [7, 30])[0] == data


def test_context_is_bounded():
    r = StreamRedactor()
    for i in range(1000):
        r.feed(f"line {i} {'x' * 50}\n".encode())
        r.ready()
    assert len(r._context) <= CONTEXT and r.held() == 0


def test_a_secret_after_a_long_clean_stretch_or_cut_across_pieces_is_found():
    r = StreamRedactor()
    out = b""
    for i in range(300):                                   # clean: the patterns are not even needed
        r.feed(f"line {i} ok\n".encode())
        out += r.ready()
    r.feed(b"GITHUB_TO")                                   # a credential word cut by the chunking
    out += r.ready()
    r.feed(f"KEN={GHP[:12]}\n".encode())
    out += r.ready()
    r.feed(f"{GHP[12:]}\n".encode())                       # its wrapped rest, a piece of its own
    out += r.ready() + r.rest()
    assert GHP[:12].encode() not in out and GHP[12:].encode() not in out
    assert out.startswith(b"line 0 ok\nline 1 ok\n") and b"GITHUB_TOKEN=[capsule redacted: " in out


def test_the_cheap_test_says_no_only_where_no_secret_can_be():
    assert not redact.may_hold_secret(LOG)                  # a build log: the patterns need not load
    assert not redact.may_hold_secret("total 4\n-rw-r--r-- 1 dev dev 12 Jan  1 10:00 notes.txt\n")
    for text in ("sk_live_abcdefghijklmnopqrstu", "AKIAIOSFODNN7EXAMPLE", "password: hunter2hunter2",
                 "x \x1b[31mghp_\x1b[m abc", PEM, "eyJhbGciOiJIUzI1NiJ9.e30.abc"):
        assert redact.may_hold_secret(text), text
