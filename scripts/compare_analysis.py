"""Compare two analysis outputs of the same traces: every CSV and Markdown file byte-equal, every
JSON equal apart from its creation time, except the fits. Used to check that a refactoring
changed no number:

    ksptrace analyze T/*.h5 --out BEFORE/report --no-cache   # old code
    ksptrace analyze T/*.h5 --out AFTER/report --no-cache    # new code
    python scripts/compare_analysis.py BEFORE AFTER          # exit 1 on any difference

(``report`` and ``segment`` sub-folders are compared, as ``make demo`` writes them.)

Fits (``fits.csv``, and each trace's ``fits`` in ``summary.json``) are compared on what a fit
is: its objective (the negative binned log-likelihood) to 1e-6 relative, its status and the
chosen ``best_fit`` exactly, its parameters only by sign: along a flat ridge of the objective
two equally good maxima have parameters that differ by any amount. ``--exact`` compares them
byte for byte as well.
"""
import csv, filecmp, io, json, sys
from pathlib import Path

RELATIVE = 1e-6


def same_objective(a, b):
    a, b = float(a), float(b)
    return a == b or abs(a - b) <= RELATIVE * max(abs(a), abs(b))


def same_params(a, b):
    return len(a) == len(b) and all((float(x) > 0) == (float(y) > 0) for x, y in zip(a, b))


def same_fit(a, b):
    """Two fits of one family (dicts with params, status, objective; criterion optional)."""
    return (a["status"] == b["status"] and same_objective(a["objective"], b["objective"])
            and same_params(a["params"], b["params"]))


def loose_summary(ja, jb):
    """Compare summary.json's traces' fits loosely; blank them so the rest compares exactly."""
    bad = []
    for ta, tb in zip(ja.get("traces", []), jb.get("traces", [])):
        fa, fb = ta.pop("fits", {}) or {}, tb.pop("fits", {}) or {}
        if set(fa) != set(fb) or not all(same_fit(fa[k], fb[k]) for k in fa):
            bad.append(f"fits of {ta.get('trace')}")
    return bad


def loose_csv(pa, pb):
    ra = list(csv.DictReader(io.StringIO(pa.read_text())))
    rb = list(csv.DictReader(io.StringIO(pb.read_text())))
    if len(ra) != len(rb):
        return False
    for a, b in zip(ra, rb):
        if (a["trace"], a["family"], a["best"]) != (b["trace"], b["family"], b["best"]):
            return False
        fit_a = dict(a, params=a["params"].split())
        fit_b = dict(b, params=b["params"].split())
        if not same_fit(fit_a, fit_b):
            return False
    return True


exact = "--exact" in sys.argv[1:]
a, b = (Path(p) for p in [x for x in sys.argv[1:] if x != "--exact"])
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
            if not exact and rel.name == "summary.json":
                for what in loose_summary(ja, jb):
                    print("differs:", rel, what); bad += 1
            if ja != jb:
                print("differs:", rel); bad += 1
        elif not exact and rel.name == "fits.csv":
            if not loose_csv(a/rel, b/rel):
                print("differs:", rel); bad += 1
        elif not filecmp.cmp(a/rel, b/rel, shallow=False):
            print("differs:", rel); bad += 1
    print(sub, len(fa), "files compared")
print("identical" if not bad else f"{bad} differences")
sys.exit(1 if bad else 0)
