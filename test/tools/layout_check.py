#!/usr/bin/env python3
"""The source tree's shape, as doc/internals.md describes it: `make check-static` runs this.

Checks every C file under src/ of a built tree (no cap on a file's length: a file
holds one concern, named by the file, however long it is; a count split files
that belonged together and kept pieces of one concern apart):

- no function has more than MAX_FUNCTION_LINES lines, from the line that names it to its
  closing brace, except the declaration tables listed in TABLES (the settings);
- each file opens with a comment that names it;
- no circle: file A depends on file B when A's object uses a symbol B's object defines
  (read with nm), or when A includes B's header ("x.h" belongs to x.c beside it); a set
  of files that all reach each other is a circle.  This is the project's own small
  version of the check, so that CI needs nothing from outside the tree.

usage: layout_check.py [TREE]   (TREE: the root of a tree built with make; default .)
Prints each breach and "layout: N files, M functions, K dependencies, 0 circles";
exits 1 on any breach.
"""
import os
import re
import subprocess
import sys
from collections import defaultdict

MAX_FUNCTION_LINES = 80
# Functions that are declaration tables: one call per setting, nothing to split.
TABLES = {"zkl_define_settings", "zkl_stats_define_settings"}


def c_files(root):
    for top, dirs, files in os.walk(os.path.join(root, "src")):
        dirs.sort()
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(top, f), root)


def functions(lines):
    """(name, first line, length) of each function in pgindent's form: the name at
    the start of a line, its body from a "{" to a "}" alone at the start of a line."""
    i = 0
    while i < len(lines):
        if lines[i] == "{":
            j = i - 1
            while j > 0 and "(" not in lines[j]:
                j -= 1
            m = re.match(r"\**(\w+)\(", lines[j])
            k = i + 1
            while k < len(lines) and lines[k] != "}":
                k += 1
            if m:
                yield m.group(1), j + 1, k - j + 1
            i = k
        i += 1


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRGS":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


def circles(graph):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main(root):
    breaches = []
    nfunctions = 0
    sources = list(c_files(root))
    for f in sources:
        text = open(os.path.join(root, f), errors="replace").read()
        lines = text.split("\n")
        if not re.match(r"/\*-+\n \*\n \* %s\n" % re.escape(os.path.basename(f)), text):
            breaches.append("%s: does not open with a comment that names it" % f)
        if not f.endswith(".c"):
            continue
        for name, first, length in functions(lines):
            nfunctions += 1
            if length > MAX_FUNCTION_LINES and name not in TABLES:
                breaches.append("%s:%d: %s has %d lines (at most %d)" %
                                (f, first, name, length, MAX_FUNCTION_LINES))

    built = [f for f in sources if f.endswith(".c") and os.path.exists(os.path.join(root, f[:-2] + ".o"))]
    if len(built) < len([f for f in sources if f.endswith(".c")]):
        breaches.append("not every source is built: run make first")
    owner, uses = {}, {}
    for f in built:
        defined, used = symbols(os.path.join(root, f[:-2] + ".o"))
        for s in defined:
            owner[s] = f
        uses[f] = used
    graph = defaultdict(set)
    for f in built:
        graph[f]
        for s in uses[f]:
            if s in owner and owner[s] != f:
                graph[f].add(owner[s])
        text = open(os.path.join(root, f), errors="replace").read()
        for h in re.findall(r'#\s*include\s+"([^"]+\.h)"', text):
            for base in (os.path.dirname(f), "src"):
                header = os.path.normpath(os.path.join(base, h))
                if os.path.exists(os.path.join(root, header)):
                    g = header[:-2] + ".c"
                    if g != f and g in uses:
                        graph[f].add(g)
                    break
    found = circles(graph)
    for c in found:
        breaches.append("circle: " + ", ".join(c))

    for b in breaches:
        print(b)
    print("layout: %d files, %d functions, %d dependencies, %d circles" %
          (len(sources), nfunctions, sum(len(v) for v in graph.values()), len(found)))
    sys.exit(1 if breaches else 0)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
