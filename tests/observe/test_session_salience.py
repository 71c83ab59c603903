"""Session salience (issue 25): what a session's failure named (the failing test, the functions of
its traceback) ranks first in that session's later cuts — a read past its budget shows that function
whole, a search cut keeps its hits — and not in another session's. Real pytest, cat and grep."""

from __future__ import annotations

import subprocess
import sys

from capsule.engine import Engine
from capsule.ground.types import Observation
from capsule.observe import salience


def project(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    funcs = [f"def rate_{i}(x):\n    y = x * {i}\n    return round(y, 2)\n\n\n" for i in range(300)]
    funcs[150] = ("def refund_half(amount):\n    cents = round(amount * 100)\n    half = cents // 2\n"
                  "    if cents % 2:\n        half -= 1\n    return half / 100\n\n\n")
    (src / "billing.py").write_text("".join(funcs))
    (src / "test_billing.py").write_text("from billing import refund_half\n\n\ndef test_refund_half():\n"
                                         "    assert refund_half(1.01) == 0.51\n")
    return src


def run(args, cwd):
    done = subprocess.run(args, cwd=cwd, capture_output=True)
    return done.stdout + done.stderr, done.returncode


def test_a_failure_named_in_the_session_ranks_first_in_its_later_read(tmp_path):
    src = project(tmp_path)
    eng = Engine(tmp_path / "st", mode="standard", scope="other")
    failing, code = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_billing.py"], src)
    assert code == 1
    eng.observe(Observation(failing, command="python -m pytest -q test_billing.py", exit_code=code, scope="S1"))
    assert "refund_half" in salience.recall(eng.state_dir, "S1")
    raw, _ = run(["cat", "billing.py"], src)
    lines = raw.decode().splitlines()
    start = lines.index("def refund_half(amount):")
    body = [f"{start + 1 + k}: {lines[start + k]}" for k in range(1, 6)]
    same = eng.observe(Observation(raw, command="cat billing.py", scope="S1")).data.decode().splitlines()
    other = eng.observe(Observation(raw, command="cat billing.py", scope="S2")).data.decode().splitlines()
    assert all(b in same for b in body)              # the function the failure named, whole
    assert not all(b in other for b in body)         # another session: the plain outline


def test_a_search_cut_keeps_the_hits_of_the_failing_name(tmp_path):
    src = project(tmp_path)
    verbs = "load save parse render merge split price round guard flush index cache retry audit ship bill".split()
    nouns = "order cart user item tax note line page file row".split()
    defs = [f"def {v}_{n}(x):\n    return x\n\n" for v in verbs for n in nouns]      # 160 names, no template
    defs.insert(120, "def refund_half(amount):\n    return amount / 2\n\n")
    (src / "billing.py").write_text("".join(defs))
    eng = Engine(tmp_path / "st", mode="standard", scope="other")
    failing, code = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_billing.py"], src)
    eng.observe(Observation(failing, command="python -m pytest -q", exit_code=code, scope="S1"))
    raw, _ = run(["grep", "-rn", "def ", "billing.py", "test_billing.py"], src)
    assert raw.count(b"\n") > 150
    same = eng.observe(Observation(raw, command="grep -rn 'def ' billing.py test_billing.py", scope="S1")).data
    other = eng.observe(Observation(raw, command="grep -rn 'def ' billing.py test_billing.py", scope="S2")).data
    assert b"def refund_half(amount):" in same and b"def refund_half(amount):" not in other
