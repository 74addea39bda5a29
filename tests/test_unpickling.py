"""Nothing another user could have written is unpickled or executed (issue 50).

Unpickling runs whatever code the bytes name. The package may unpickle only bytes that no other
user can have written; each place that does is listed here with why. A new ``pickle.load`` (or
``np.load(..., allow_pickle=True)``, ``marshal``, ``torch.load``, ...) anywhere in the package
fails this test until it is shown to be of that kind and listed. (The process pools of
``concurrent.futures`` pickle too, over pipes between this process and its own workers.)
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

UNSAFE = re.compile(
    r"\bpickle\.loads?\(|\bfrom pickle import\b|\bUnpickler\b|allow_pickle\s*=\s*True"
    r"|\bmarshal\b|\bshelve\b|\bdill\b|\bcloudpickle\b|\bjoblib\b|\btorch\.load\b"
    r"|\byaml\.(unsafe_|full_)?load\(|\bjsonpickle\b|(?<![\w.])(eval|exec)\(")

ALLOWED: dict[str, tuple[int, str]] = {
    "ksptrace/trace/shared_read.py": (
        3, "the header and fields a forked reader child wrote into an anonymous shared map "
           "that this process created before the fork: no other process can reach it"),
    "ksptrace/trace/reader_child.py": (
        2, "requests and replies on pipes between this process and the reader child it forked"),
    "ksptrace/trace/probe.py": (
        1, "the reply on a pipe from the child this process forked"),
    "ksptrace/studies/variability/run/sealed.py": (
        1, "a cache entry from a private folder, a file of this user, whose HMAC under this "
           "user's secret key (mode 0600, in the private cache folder) checks out"),
}


def _uses() -> Counter[str]:
    found: Counter[str] = Counter()
    for path in sorted((ROOT / "ksptrace").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        found[str(path.relative_to(ROOT))] += len(UNSAFE.findall(text))
    return +found


def test_nothing_is_unpickled_but_what_this_process_or_user_wrote() -> None:
    found = _uses()
    unexpected = {f: n for f, n in found.items() if n > ALLOWED.get(f, (0, ""))[0]}
    assert not unexpected, (
        f"unpickling or executing bytes in {unexpected}: store data (JSON, HDF5, .npz without "
        "allow_pickle), or list it in ALLOWED with why no other user can have written them")
    assert found == Counter({f: n for f, (n, _) in ALLOWED.items()}), \
        "a listed place no longer unpickles: update ALLOWED"


def test_the_pattern_finds_what_it_must() -> None:
    for line in ["done = pickle.load(f)", "x = pickle.loads(b)", "np.load(p, allow_pickle=True)",
                 "import marshal", "torch.load(p)", "yaml.load(s)", "eval(text)",
                 "from pickle import loads", "joblib.load(p)"]:
        assert UNSAFE.search(line), line
    for line in ["pickle.dumps(x)", "np.load(p)", "json.loads(s)", "literal_eval(s)",
                 "self.evaluate(x)", "yaml.safe_load(s)"]:
        assert not UNSAFE.search(line), line
