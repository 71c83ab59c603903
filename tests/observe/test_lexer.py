"""The shell lexer: segments, pipes, quotes, unattestable constructs, transparent prefixes."""

from __future__ import annotations

import pytest

from capsule.observe.lexer import LexError, lex


def words(line: str) -> list[list[str]]:
    return [[s.words for s in seg.stages] for seg in lex(line).segments]


def test_splits_on_and_or_semicolon_and_newline():
    assert words("cd x && pytest -q || echo no; ls\nmake") == [
        [["cd", "x"]], [["pytest", "-q"]], [["echo", "no"]], [["ls"]], [["make"]]]
    assert [seg.op for seg in lex("a && b || c; d").segments] == ["&&", "||", ";", ""]


def test_pipes_make_stages_and_the_last_one_is_visible():
    seg = lex("pytest -q 2>&1 | tail -5").segments[0]
    assert [s.words for s in seg.stages] == [["pytest", "-q"], ["tail", "-5"]]
    assert seg.visible.tool == "tail"


def test_operators_inside_quotes_are_words():
    assert words("grep -rn 'a && b | c; d' src") == [[["grep", "-rn", "a && b | c; d", "src"]]]
    assert words('echo "x || y"') == [[["echo", "x || y"]]]
    assert words(r"echo a\;b") == [[["echo", "a;b"]]]


@pytest.mark.parametrize("line,reason", [
    ("echo `date`", "backtick"),
    ("echo $(date)", "$( )"),
    ('echo "$(date)"', "$( )"),
    ("make > build.log", "redirected"),
    ("make >> build.log 2>&1", "redirected"),
    ("pytest &> out.txt", "redirected"),
    ("cat <<EOF\nx\nEOF", "heredoc"),
    ("diff <(ls a) <(ls b)", "process substitution"),
    ("sleep 10 &", "background"),
])
def test_unattestable_constructs(line, reason):
    lexed = lex(line)
    assert not lexed.attestable
    assert any(reason in r for r in lexed.unattestable)


@pytest.mark.parametrize("line", [
    "pytest 2>&1", "make 2>/dev/null", "ls >/dev/null 2>&1", "sort < input.txt", "echo '$(not run)'",
    "grep -n 'a`b' x",
])
def test_attestable_redirects_and_quoted_lookalikes(line):
    assert lex(line).attestable, lex(line).unattestable


@pytest.mark.parametrize("line,prefix,rest", [
    ("RUST_BACKTRACE=1 cargo test", ["RUST_BACKTRACE=1"], ["cargo", "test"]),
    ("env A=1 B=2 pytest", ["env", "A=1", "B=2"], ["pytest"]),
    ("sudo -u bob make", ["sudo", "-u", "bob"], ["make"]),
    ("time nice -n 5 go test ./...", ["time", "nice", "-n", "5"], ["go", "test", "./..."]),
    ("timeout 30 npm test", ["timeout", "30"], ["npm", "test"]),
    ("timeout -s KILL 5m cargo build", ["timeout", "-s", "KILL", "5m"], ["cargo", "build"]),
    ("docker exec -it web pytest -q", ["docker", "exec", "-it", "web"], ["pytest", "-q"]),
    ("docker exec -u app -w /app web ls", ["docker", "exec", "-u", "app", "-w", "/app", "web"], ["ls"]),
    ("docker compose exec api ruff check", ["docker", "compose", "exec", "api"], ["ruff", "check"]),
    ("kubectl exec pod-1 -c app -- ls -la", ["kubectl", "exec", "pod-1", "-c", "app", "--"], ["ls", "-la"]),
    ("poetry run pytest", ["poetry", "run"], ["pytest"]),
    ("uv run --frozen mypy src", ["uv", "run", "--frozen"], ["mypy", "src"]),
    ("pipenv run pytest", ["pipenv", "run"], ["pytest"]),
    ("npx eslint src", ["npx"], ["eslint", "src"]),
    ("pnpm exec vitest run", ["pnpm", "exec"], ["vitest", "run"]),
    ("bunx tsc --noEmit", ["bunx"], ["tsc", "--noEmit"]),
    ("direnv exec . go build ./...", ["direnv", "exec", "."], ["go", "build", "./..."]),
])
def test_transparent_prefixes_are_peeled_and_kept(line, prefix, rest):
    stage = lex(line).segments[0].visible
    assert stage.prefix == prefix
    assert stage.words == rest
    assert stage.prefix + stage.words == lex(line).segments[0].stages[0].prefix + lex(line).segments[0].stages[0].words


def test_bare_prefix_is_not_peeled_to_nothing():
    assert lex("env").segments[0].visible.words == ["env"]
    assert lex("time").segments[0].visible.words == ["time"]


def test_bad_quoting_raises():
    with pytest.raises(LexError):
        lex("echo 'unterminated")
    with pytest.raises(LexError):
        lex('echo "unterminated')


def test_comment_ends_the_line():
    assert words("ls -la # list it && rm -rf /") == [[["ls", "-la"]]]


def test_prefix_options_that_take_values_are_skipped():
    assert lex("uv run --with rich python x.py").segments[0].visible.words == ["python", "x.py"]
    assert lex("docker-compose exec -T api pytest").segments[0].visible.words == ["pytest"]
    assert lex("docker compose logs api").segments[0].visible.words == ["docker", "compose", "logs", "api"]
