"""Outline: tree-sitter declarations per language, bodies elided, lines byte-exact."""

import re
from pathlib import Path

import pytest

from capsule.observe.content import outline as ol
from capsule.observe.transform_types import Context

SAMPLES = Path(__file__).parent / "samples"

# file -> declaration lines that must be shown, and body lines that must not
CASES = {
    "cart.js": (["export function parseArgs(argv) {", "const handler = async (req, res) => {",
                 "class Cart {", "  constructor(owner) {", "  add(item) {", "  get total() {"],
                ["    this.items.push(item);", '  res.end("ok");']),
    "base.ts": (["export interface Priced {", "export type Id = string | number;",
                 "export abstract class Base<T> implements Priced {",
                 "  protected total(items: T[]): number {", "namespace Util {",
                 "  export function id<T>(x: T): T {"],
                ["    let t = 0;"]),
    "header.tsx": (["export function Header({ title }: Props) {",
                    "export const Footer = (p: Props) => {"], ["      <h1>{title}</h1>"]),
    "counter.rs": (["pub struct Counter {", "impl Counter {", "    pub fn new() -> Self {",
                    "    pub fn add(&mut self, word: &str) {", "pub trait Score {",
                    "    fn score(&self) -> u32;", "fn main() {"],
                   ['    c.add("x");']),
    "item.go": (["package inventory", "type Item struct {", "func NewItem(sku string) Item {",
                 "func (i *Item) Add(n int) error {"], ["\ti.Count += n"]),
    "Inventory.java": (["public class Inventory {", "    public Inventory() {",
                        "    public String toString() {", "    public void add(String item) {"],
                       ["        items.add(item);"]),
    "ring.c": (["#include <stdio.h>", "typedef struct ring {", "int ring_push(ring_t *r, int v)",
                "static int ring_full(const ring_t *r) {"], ["    r->buf[r->head] = v;"]),
    "basket.cpp": (["namespace shop {", "class Basket {", "    void add(const T& item) {",
                    "int total(const std::vector<int>& xs) {"], ["        items_.push_back(item);"]),
    "invoice.rb": (["module Billing", "  class Invoice", "    def initialize(lines)", "    def total",
                    "    def self.load(path)"], ["      @lines = lines"]),
    "run.sh": (["log() {", "function cleanup {"], ['  rm -rf "$LOG_DIR"']),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_outline_keeps_declarations_and_elides_bodies(name):
    path = SAMPLES / name
    source = path.read_text()
    result = ol.outline(source, str(path), detail="signatures")
    shown = [re.sub(r"^\d+: ", "", line) for line in result.text.split("\n")[:-1]]
    must, never = CASES[name]
    for decl in must:
        assert any(line.startswith(decl) for line in shown), (decl, result.text)
    for body in never:
        assert body not in shown, (body, result.text)
    assert "{ … " in result.text or " … " in result.text
    # every shown line is the original line with that number (plus an elision suffix)
    lines = source.split("\n")
    for line in result.text.split("\n")[:-1]:
        m = re.match(r"^(\d+): (.*)$", line)
        if m:
            assert m.group(2).startswith(lines[int(m.group(1)) - 1])
    # kept + removed == total
    total = len(lines) - (1 if lines[-1] == "" else 0)
    kept = sum(1 for line in result.text.split("\n") if re.match(r"^\d+: ", line))
    assert kept + result.removed_lines == total


def test_footer_names_the_exact_follow_up():
    source = (SAMPLES / "cart.js").read_text()
    result = ol.outline(source, "src/cart.js", detail="signatures")
    footer = result.text.split("\n")[-1]
    m = re.search(r"ctx_read src/cart\.js lines:(\d+)-(\d+)", footer)
    assert m, footer
    body = source.split("\n")[int(m.group(1)) - 1:int(m.group(2))]
    assert body[0] == "  const out = {};" and body[-1] == "}"


def test_only_listed_grammars_load():
    source = (SAMPLES / "counter.rs").read_text()
    refused = ol.outline(source, "counter.rs", languages=("python",))
    assert refused.text == source and "not in this role's languages" in refused.notes[0]
    allowed = ol.outline(source, "counter.rs", languages=("rs",))
    assert "impl Counter {" in allowed.text


def test_compact_lists_members_and_keeps_top_level_names():
    src = "import os\nimport sys\nimport re\n\nX = 1\n\nclass A:\n    def f(self):\n" \
          "        return 1\n\n    def g(self):\n        return 2\n\ndef h():\n    pass\n"
    result = ol.outline(src, "m.py", detail="compact")
    assert "members: f, g" in result.text
    for name in ("X = 1", "class A:", "def h():", "import os"):
        assert name in result.text
    assert "import sys" not in result.text


def test_shebang_picks_language_and_transform_reads_ctx():
    src = "#!/usr/bin/env python3\nimport os\n\ndef main():\n    print(1)\n    return 0\n"
    result = ol.transform(src, Context(path="tool", languages=()))
    assert "def main(): { … 2 lines }" in result.text


def test_unknown_language_is_left_alone():
    result = ol.outline("just text\n", "notes.txt")
    assert result.text == "just text\n" and not result.removals


def test_stdlib_modules_keep_every_top_level_name_and_shrink():
    import sysconfig
    import tree_sitter

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    parser = tree_sitter.Parser(ol.load("python"))
    for name in ("json/decoder.py", "argparse.py", "dataclasses.py"):
        source = (stdlib / name).read_text()
        result = ol.outline(source, name)
        assert len(result.text) < 0.2 * len(source)
        for node in parser.parse(source.encode()).root_node.named_children:
            if node.type == "decorated_definition":
                node = node.child_by_field_name("definition")
            if node.type in ("function_definition", "class_definition"):
                assert node.child_by_field_name("name").text.decode() in result.text


def test_grammar_permission_follows_the_wheel():
    tsx = (SAMPLES / "header.tsx").read_text()
    assert "export function Header" in ol.outline(tsx, "h.tsx", languages=("typescript",)).text
    header = "struct point { int x; int y; };\nint area(struct point p);\n" * 3
    assert ol.outline(header, "geo.h", languages=("cpp",)).notes[0] == "cpp outline"


def test_whole_file_read_outline_folds_other_languages_signatures_and_imports():
    # the read transform's outline (transforms/read.py) over TypeScript: a run of imports is one
    # line naming each, a 5-line signature keeps its first and last line, parameters named
    from capsule.observe.transforms.read import _outline

    src = ('import { a } from "./a";\nimport { b, c } from "./b";\nimport * as d from "d";\nimport e from "e";\n\n'
           'export function longOne(\n  first: number,\n  second: string = "x",\n  ...rest: unknown[]\n'
           '): Promise<void> {\n  return Promise.resolve();\n}\n'
           + "".join(f"export function f{i}(x: number): number {{\n  return x + {i};\n}}\n" for i in range(30)))
    out = _outline(src, Context(), "x.ts", "unknown").text.split("\n")
    assert out[0] == '1-4: imports: { a } from "./a"; { b, c } from "./b"; * as d from "d"; e from "e"'
    assert out[1:4] == ["6: export function longOne(", "    …7-9: first, second, ...rest", "10: ): Promise<void> {"]
    assert all(f"{13 + 3 * i}: export function f{i}(x: number): number {{" in out for i in range(30))
