"""Streaming filter for `go test -json`: keep the events that explain a failure, as they came.

Not responsible for plain `go test` text (a TOML filter in data/go.toml).
Invariant: every `fail` event and every output event of a failing test that is not
runner noise, a Go-runtime stack frame or the testing package's re-panic of a message already
shown as `panic: … [recovered]` is kept byte-exact; non-JSON lines (build
errors) are always kept.
"""

from __future__ import annotations

import json
import re

from capsule.observe.filters.streaming import StreamFilter

_NOISE = re.compile(r"^(=== (RUN|PAUSE|CONT|NAME)|\s*--- PASS|PASS$|ok\s|coverage: |\s*$)")
_RUNTIME = re.compile(r"^(\t/usr/(local/)?(lib/)?go[^/]*/src/|\t\S*/go/src/(testing|runtime)/|goroutine \d+ \[|created by testing|(testing|runtime)\.\S+\(|panic\(\{|[\w.*/()\[\]-]+\(.*\)$)")


class GoTestJsonFilter(StreamFilter):
    ranged_markers = True

    def __init__(self) -> None:
        super().__init__()
        self.failed = 0
        self.passed = 0
        self.recovered: set[tuple] = set()   # (package, test, message) of a "panic: … [recovered]" line

    def feed_line(self, line: str) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            self.emit(line)
            return
        if not isinstance(event, dict):
            self.emit(line)
            return
        action = event.get("Action")
        if action == "fail":
            self.failed += 1
            self.emit(line)
            return
        if action in ("pass", "run", "start", "pause", "cont", "skip", "bench"):
            if action == "pass" and event.get("Test"):
                self.passed += 1
            self.keep_if(line, action == "skip" and bool(event.get("Test")) is False, f"test event {action}")
            return
        if action in ("output", "build-output"):
            text = (event.get("Output") or "").rstrip("\n")
            where = (event.get("Package"), event.get("Test"))
            if text.startswith("panic: ") and text.endswith(" [recovered]"):
                self.recovered.add((*where, text[len("panic: "):-len(" [recovered]")]))
            elif text.startswith("\tpanic: ") and (*where, text[len("\tpanic: "):]) in self.recovered:
                self.keep_if(line, False, "re-panic repeating the recovered panic above")
                return
            noise = bool(_NOISE.match(text)) or bool(_RUNTIME.match(text))
            self.keep_if(line, not noise, "runner output / runtime frame")
            return
        self.emit(line)

    def on_exit(self, exit_code: int | None) -> None:
        if not self.failed and exit_code not in (0, None):
            return  # nothing to add: build errors arrive as non-JSON lines and were kept
