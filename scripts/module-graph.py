#!/usr/bin/env python3
"""The import graphs of the crate, of the Python bindings' crate and of the Python
package, and their cycles.

Three graphs, each checked on its own:

- src/: the crate. Reads every `crate::...` and `super::...` path (in `use` items and
  inline) and every `use` of a child module, maps it to the file of the longest module
  path it names, and adds the edge importing file -> imported file (a module's `mod`
  declarations are not imports; a parent's items used by its child are).
- python/src/: the bindings' crate (`scanrt._scanrt`), by the same rules.
- python/scanrt/: the Python package. Every `import` and `from ... import` that names a
  module of the package, wherever it stands (inside functions too), relative
  (`from . import x`, `from ._x import y`) or absolute (`scanrt._x`): the edge goes to
  the module named, or to the package's `__init__.py` for a name that is no module of its
  own (`from . import f`). The extension module counts through its stub, `_scanrt.pyi`.

One door to the CUDA driver: outside src/runtime/cu/, no Rust file of either crate names
cudarc's raw driver layer (`cudarc::driver::sys`, `sys::cu...` calls); each one is
printed as `raw driver call: FILE:LINE`, and fails the check too.

Prints each strongly connected component of more than one file (src/'s as
`import cycle: ...`, the others' labelled with their folder) and exits 1 if any graph has
one; `--dot` prints the graphs too (src/'s edges as they are, the others in a cluster
each, their names prefixed with the crate or package).

    scripts/module-graph.py [--dot]
"""
import ast
import pathlib
import re
import sys

repo = pathlib.Path(__file__).resolve().parent.parent


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


def rust_graph(root: pathlib.Path) -> tuple:
    """``(files, edges)`` of the crate whose root module is ``root``/lib.rs, by module
    path (a tuple; the crate root is ``()``)."""

    def module_of(path: pathlib.Path) -> tuple:
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] in ("mod", "lib"):
            parts = parts[:-1]
        return tuple(parts)

    files = {module_of(p): p for p in root.rglob("*.rs") if "bin" not in p.relative_to(root).parts}
    edges = {m: set() for m in files}
    for module, path in files.items():
        text = strip_comments(path.read_text())
        paths = expand_use_groups(text) + re.findall(r"\bcrate::((?:\w+::)*\w+)", text)
        # `super::x` from this file, and `use child::x` of a module's own children.
        own = module if path.stem in ("mod", "lib") else module[:-1]
        for rel in re.findall(r"\bsuper::((?:\w+::)*\w+)", text):
            paths.append("::".join(module[:-1] + tuple(rel.split("::"))))
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
    return files, edges


def python_graph(package: pathlib.Path) -> tuple:
    """``(files, edges)`` of the flat package ``package``, by module name (``__init__``
    for the package itself)."""
    name = package.name
    # A stub stands for a compiled module of that name; a .py file wins over its stub.
    files = {p.stem: p for p in package.glob("*.pyi")}
    files.update({p.stem: p for p in package.glob("*.py")})
    edges = {m: set() for m in files}

    def sibling(dotted: str):
        """The module a dotted name inside the package names, or None."""
        if not dotted:
            return "__init__"
        first = dotted.split(".")[0]
        return first if first in files else None

    for module, path in files.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == name or alias.name.startswith(name + "."):
                        targets.append(sibling(alias.name[len(name) + 1 :]))
            elif isinstance(node, ast.ImportFrom):
                if node.level == 1:
                    base = node.module or ""
                elif node.level == 0 and node.module and (node.module + ".").startswith(name + "."):
                    base = node.module[len(name) + 1 :]
                else:
                    continue  # another library, or above the package
                target = sibling(base)
                if target == "__init__":
                    # `from . import x`: the module x, else the package's own name x.
                    targets += [a.name if a.name in files else "__init__" for a in node.names]
                else:
                    targets.append(target)
            edges[module].update(t for t in targets if t is not None and t != module)
    return files, edges


def cycles_of(edges: dict) -> list:
    """The strongly connected components of more than one node (Tarjan's)."""
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [c for c in components if len(c) > 1]


sys.setrecursionlimit(10000)
crate_name = lambda m: "::".join(m) or "crate"  # noqa: E731
graphs = [
    # (label, (files, edges), node name); src/ first, labelled as it always was.
    (None, rust_graph(repo / "src"), crate_name),
    ("python/src", rust_graph(repo / "python" / "src"), lambda m: "::".join(("_scanrt",) + m)),
    ("python/scanrt", python_graph(repo / "python" / "scanrt"),
     lambda m: "scanrt" if m == "__init__" else f"scanrt.{m}"),
]

if "--dot" in sys.argv:
    print("digraph modules {")
    for label, (_, edges), name in graphs:
        indent = "  " if label is None else "    "
        if label is not None:
            print(f'  subgraph "cluster_{label}" {{')
            print(f'    label="{label}";')
        for v in sorted(edges):
            for w in sorted(edges[v]):
                print(f'{indent}"{name(v)}" -> "{name(w)}";')
        if label is not None:
            print("  }")
    print("}")

found = False
door = repo / "src" / "runtime" / "cu"
for path in sorted(list((repo / "src").rglob("*.rs")) + list((repo / "python" / "src").rglob("*.rs"))):
    if door in path.parents:
        continue
    for number, line in enumerate(strip_comments(path.read_text()).splitlines(), 1):
        if re.search(r"\bcudarc::driver::sys\b|\bsys::cu[A-Z]\w*\s*\(", line):
            print(f"raw driver call: {path.relative_to(repo)}:{number}: {line.strip()}")
            found = True
for label, (files, edges), name in graphs:
    cycles = cycles_of(edges)
    found = found or bool(cycles)
    where = "" if label is None else f"{label}: "
    for c in cycles:
        print(f"{where}import cycle:", ", ".join(sorted(name(m) for m in c)))
    print(f"{where}{len(files)} files, {sum(len(e) for e in edges.values())} imports, {len(cycles)} cycles",
          file=sys.stderr)
sys.exit(1 if found else 0)
