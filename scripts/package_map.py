"""Print the package map of docs/architecture.md from the code: each package, its module count
and the packages it imports (grimp, the graph library behind import-linter).

    python scripts/package_map.py          # the map, as Markdown
    python scripts/package_map.py --check  # exit 1 when docs/architecture.md holds another map
    python scripts/package_map.py --write  # put the current map into docs/architecture.md

tests/test_lint.py runs the check, so the picture in the docs cannot drift from the code.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- package map: begin -->", "<!-- package map: end -->"


def unit(module: str) -> str:
    """The package a module counts under: ksptrace.X, or ksptrace.studies.X / .report."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "studies" and (ROOT / "/".join(parts[:3])).is_dir():
        return ".".join(parts[:3])
    if len(parts) >= 2:
        return ".".join(parts[:2])
    return module


BASICS = {"ksptrace.errors", "ksptrace.params", "ksptrace.outputs", "ksptrace.cachedir",
          "ksptrace.version", "ksptrace.escape", "ksptrace.inputs"}
"""The bottom layer, which every package may use: left out of the imports column."""


def package_map() -> str:
    graph = grimp.build_graph("ksptrace")
    deps: dict[str, set[str]] = collections.defaultdict(set)
    for m in graph.modules:
        for imported in graph.find_modules_directly_imported_by(m):
            a, b = unit(m), unit(imported)
            if a != b and b != "ksptrace" and b not in BASICS:
                deps[a].add(b)
    counts: dict[str, list[int]] = collections.defaultdict(lambda: [0])
    for path in sorted((ROOT / "ksptrace").rglob("*.py")):
        mod = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        counts[unit(mod)][0] += 1
    lines = ["```text", f"{'package':24} {'modules':>7}  imports (besides the basics)"]
    for name in sorted(counts):
        if name == "ksptrace":
            continue
        short = sorted(d.removeprefix("ksptrace.") for d in deps.get(name, ()))
        n = counts[name][0]
        lines.append(f"{name.removeprefix('ksptrace.'):24} {n:7d}  "
                     + (", ".join(short) or "-"))
    lines.append("```")
    return "\n".join(lines)


def main() -> int:
    text = package_map()
    if "--check" not in sys.argv and "--write" not in sys.argv:
        print(text)
        return 0
    doc = DOC.read_text()
    head, rest = doc.split(BEGIN, 1)
    current, tail = rest.split(END, 1)
    current = current.strip()
    if "--write" in sys.argv:
        DOC.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")
        return 0
    if current != text:
        print(f"{DOC.relative_to(ROOT)}: the package map is out of date; run "
              "python scripts/package_map.py --write",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
