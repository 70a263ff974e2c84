#!/usr/bin/env python3
"""The repository's own layout check, run by .ci/run.

For each crate given (default: every crate folder at the repository root), reads its src/ and
reports:
  - cycles between its top-level modules (a module is a file or a folder directly under src/;
    an edge is a `crate::module` path in non-test code), and
  - source files over MAX_LINES lines of non-test code (default 1,000).
Exits 1 if it finds either, 0 otherwise.

Usage: .ci/rooms.py [--max-lines N] [CRATE_DIR ...]
"""
import os
import re
import sys

TEST_MODULE = re.compile(r"\n#\[cfg\(test\)\]\s*\nmod tests\b")
CRATE_PATH = re.compile(r"crate::(\{|[A-Za-z_][A-Za-z0-9_]*)")


def non_test_code(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return TEST_MODULE.split(f.read())[0]


def referenced_modules(text):
    """Top-level module names named by `crate::x` and `crate::{x, y::z}` paths."""
    out = set()
    for m in CRATE_PATH.finditer(text):
        if m.group(1) != "{":
            out.add(m.group(1))
            continue
        depth, i, item, items = 1, m.end(), "", []
        while i < len(text) and depth:
            c = text[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            if depth == 1 and c == ",":
                items.append(item)
                item = ""
            elif depth >= 1 and not (depth == 1 and c in "{}"):
                item += c
            i += 1
        items.append(item)
        for it in items:
            w = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)", it)
            if w:
                out.add(w.group(1))
    return out


def modules_of(src):
    """Top-level module name -> its files (None for lib.rs/main.rs)."""
    top = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            first = os.path.relpath(path, src).split(os.sep)[0]
            name = first[:-3] if first.endswith(".rs") else first
            top.setdefault(None if name in ("lib", "main") else name, []).append(path)
    return top


def cycles(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def check(crate, max_lines):
    src = os.path.join(crate, "src")
    top = modules_of(src)
    names = {m for m in top if m}
    edges = {m: set() for m in names}
    problems = []
    for module, files in top.items():
        for path in files:
            text = non_test_code(path)
            lines = text.count("\n") + 1
            if lines > max_lines:
                problems.append(f"{path}: {lines} lines of non-test code (limit {max_lines})")
            if module is None:
                continue
            for r in referenced_modules(text):
                if r in names and r != module:
                    edges[module].add(r)
    for component in cycles(edges):
        problems.append(f"{crate}: module cycle: {' <-> '.join(component)}")
    return len(names), problems


def main(argv):
    max_lines = 1000
    if len(argv) >= 2 and argv[0] == "--max-lines":
        max_lines, argv = int(argv[1]), argv[2:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    crates = argv or sorted(
        os.path.join(root, d)
        for d in os.listdir(root)
        if os.path.isfile(os.path.join(root, d, "Cargo.toml"))
        and os.path.isdir(os.path.join(root, d, "src"))
    )
    failed = False
    for crate in crates:
        count, problems = check(crate, max_lines)
        name = os.path.basename(crate.rstrip("/"))
        if problems:
            failed = True
            for p in problems:
                print(p)
        else:
            print(f"{name}: {count} top-level modules, no cycle, no file over {max_lines} lines")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
