"""Compare two analysis outputs of the same traces: every CSV and Markdown file byte-equal, every
JSON equal apart from its creation time. Used to check that a refactoring changed no number:

    ksptrace analyze T/*.h5 --out BEFORE/report --no-cache   # old code
    ksptrace analyze T/*.h5 --out AFTER/report --no-cache    # new code
    python scripts/compare_analysis.py BEFORE AFTER          # exit 1 on any difference

(``report`` and ``segment`` sub-folders are compared, as ``make demo`` writes them.)
"""
import json, sys, filecmp
from pathlib import Path
a, b = Path(sys.argv[1]), Path(sys.argv[2])
bad = 0
for sub in ("report", "segment"):
    if not (a / sub).is_dir():
        continue
    fa = sorted(p.relative_to(a) for p in (a/sub).rglob("*") if p.suffix in (".csv", ".json", ".md"))
    fb = sorted(p.relative_to(b) for p in (b/sub).rglob("*") if p.suffix in (".csv", ".json", ".md"))
    if fa != fb:
        print("file lists differ", set(fa) ^ set(fb)); bad += 1
    for rel in fa:
        if rel.suffix == ".json":
            ja, jb = json.loads((a/rel).read_text()), json.loads((b/rel).read_text())
            for j in (ja, jb):
                j.get("metadata", {}).pop("created", None)
            if ja != jb:
                print("differs:", rel); bad += 1
        elif not filecmp.cmp(a/rel, b/rel, shallow=False):
            print("differs:", rel); bad += 1
    print(sub, len(fa), "files compared")
print("identical" if not bad else f"{bad} differences")
sys.exit(1 if bad else 0)
