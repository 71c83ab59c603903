"""The "line used later" measure of benchmarks/bench_traffic.py (benchmarks/traffic_usage.py): which
lines of a real tool output the agent's next steps used, and which of those an emission kept whole."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import traffic_usage as usage  # noqa: E402

OUTPUT = "\n".join([
    "package telemetry",
    "func (p *PostHogClient) TrackCommand(cmd *cobra.Command) {",
    "\tif cmd == nil {",
    "\t\treturn",
    "\t}",
    '\t\t\tSet("command", name),',
    "ok  \tentire.io/cli/cmd/entire/cli/strategy\t1.713s",
    "FAIL\tentire.io/cli/cmd/entire/cli/telemetry\t0.256s",
])


def test_a_line_quoted_verbatim_is_used_whatever_its_indentation():
    later = ['Edit {"old_string": "  Set(\\"command\\", name),"}', 'Set("command", name),']
    assert usage.used_lines(OUTPUT, later) == ['\t\t\tSet("command", name),']


def test_a_line_whose_rare_tokens_the_agent_names_is_used():
    later = ["The telemetry package failed after 0.256s: look at entire.io/cli/cmd/entire/cli/telemetry"]
    assert usage.used_lines(OUTPUT, later) == ["FAIL\tentire.io/cli/cmd/entire/cli/telemetry\t0.256s"]


def test_one_shared_token_is_not_use():
    assert usage.used_lines(OUTPUT, ["the strategy package"]) == []
    assert usage.used_lines(OUTPUT, ["it took 1.713s"]) == []


def test_tokens_common_in_the_output_or_named_by_the_task_do_not_count():
    common = "\n".join(f"worker {i}: request handled by PostHogClient" for i in range(10))
    assert usage.used_lines(common, ["PostHogClient handled the request"]) == []
    later = ["TrackCommand takes a cobra.Command"]
    assert usage.used_lines(OUTPUT, later) == ["func (p *PostHogClient) TrackCommand(cmd *cobra.Command) {"]
    assert usage.used_lines(OUTPUT, later, intent="fix TrackCommand for a nil cobra.Command") == []


def test_short_lines_are_never_counted():
    assert usage.used_lines(OUTPUT, ["}", "return", "\t}"]) == []


def test_kept_means_shown_whole_on_a_line_of_its_own():
    used = ['\t\t\tSet("command", name),', "func (p *PostHogClient) TrackCommand(cmd *cobra.Command) {"]
    emitted = 'Set("command", name),\n[12 more lines]\nfunc (p *PostHogClient) TrackCommand(cmd *cobra.Co…'
    assert usage.kept(used, emitted) == [True, False]


def test_head_tail_keeps_the_ends_and_counts_the_rest():
    text = "\n".join(f"line {i}" for i in range(1, 201))
    cut = usage.head_tail(text, 40, 40).split("\n")
    assert cut[:40] == [f"line {i}" for i in range(1, 41)]
    assert cut[-40:] == [f"line {i}" for i in range(161, 201)]
    assert cut[40] == "[120 more lines]"
    assert usage.head_tail("a\nb", 40, 40) == "a\nb"


def test_a_diff_line_is_used_when_the_agent_pastes_its_code_without_the_marker():
    diff = 'diff --git a/x.go b/x.go\n+++ b/x.go\n+\treviewtypes "github.com/entireio/cli/review/types"\n-\told "github.com/entireio/cli/old"\n'
    later = ['import (\n\treviewtypes "github.com/entireio/cli/review/types"\n)']
    assert usage.used_lines(diff, later) == ['+\treviewtypes "github.com/entireio/cli/review/types"']


def test_a_numbered_view_line_counts_as_its_text():
    used = ['\tfmt.Fprintln(w, "✓ Settings saved")', "return nil"]
    emitted = 'func runSetup() error {\n209: \tfmt.Fprintln(w, "✓ Settings saved")\n[3 more lines L210-212]'
    assert usage.kept(used, emitted) == [True, False]
