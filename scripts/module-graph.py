#!/usr/bin/env python3
"""The import graph of the crate's source files, and its cycles.

Reads every `crate::...` and `super::...` path in src/ (in `use` items and inline) and
every `use` of a child module, maps it to the file of the longest module path it names,
and adds the edge importing file -> imported file (a module's `mod` declarations are not
imports; a parent's items used by its child are). Prints each strongly connected
component of more than one file and exits 1 if there is any; `--dot` prints the graph.

    scripts/module-graph.py [--dot]
"""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent / "src"


def module_of(path: pathlib.Path) -> tuple:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)


files = {module_of(p): p for p in root.rglob("*.rs") if "bin" not in p.relative_to(root).parts}


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def expand_use_groups(text: str) -> list:
    """Every path in `use crate::a::{b, c::{d, e}}` items, fully spelled out."""
    paths = []
    for m in re.finditer(r"\buse\s+crate::([^;]*);", text, flags=re.S):
        stack = [("", m.group(1).replace("\n", " "))]
        while stack:
            prefix, body = stack.pop()
            body = body.strip()
            brace = body.find("{")
            if brace < 0:
                for item in body.split(","):
                    item = item.strip().split(" as ")[0].strip()
                    if item:
                        paths.append(prefix + item)
                continue
            head, inner = body[:brace], body[brace + 1 : body.rfind("}")]
            depth, start = 0, 0
            for i, ch in enumerate(inner + ","):
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                elif ch == "," and depth == 0:
                    stack.append((prefix + head, inner[start:i]))
                    start = i + 1
    return paths


edges = {m: set() for m in files}
for module, path in files.items():
    text = strip_comments(path.read_text())
    paths = expand_use_groups(text) + re.findall(r"\bcrate::((?:\w+::)*\w+)", text)
    # `super::x` from this file, and `use child::x` of a module's own children.
    own = module if path.stem in ("mod", "lib") else module[:-1]
    for rel in re.findall(r"\bsuper::((?:\w+::)*\w+)", text):
        paths.append("::".join(own[:-1] + tuple(rel.split("::"))))
    for child in re.findall(r"\buse\s+(\w+)::", text):
        if own + (child,) in files:
            paths.append("::".join(own + (child,)))
    for p in paths:
        parts = tuple(x for x in p.split("::") if x and x != "self")
        for k in range(len(parts), 0, -1):
            target = parts[:k]
            if target in files:
                if target != module:
                    edges[module].add(target)
                break

# Tarjan's strongly connected components.
index, low, on_stack, stack, components = {}, {}, set(), [], []


def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on_stack.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on_stack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        component = []
        while True:
            w = stack.pop()
            on_stack.discard(w)
            component.append(w)
            if w == v:
                break
        components.append(component)


sys.setrecursionlimit(10000)
for v in sorted(files):
    if v not in index:
        visit(v)

name = lambda m: "::".join(m) or "crate"
if "--dot" in sys.argv:
    print("digraph modules {")
    for v in sorted(edges):
        for w in sorted(edges[v]):
            print(f'  "{name(v)}" -> "{name(w)}";')
    print("}")
cycles = [c for c in components if len(c) > 1]
for c in cycles:
    print("import cycle:", ", ".join(sorted(name(m) for m in c)))
print(f"{len(files)} files, {sum(len(e) for e in edges.values())} imports, {len(cycles)} cycles", file=sys.stderr)
sys.exit(1 if cycles else 0)
