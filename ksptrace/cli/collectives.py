"""``ksptrace collectives``: time one MPI collective over message sizes, on every rank.

Like ``ksptrace run``: with ``--np P`` it starts mpiexec itself (root and oversubscription
flags added and recorded); under your own mpiexec/srun, leave ``--np`` out. The algorithm is
forced through the MPI library's own variables, set in each rank before MPI starts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import tempfile
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from ksptrace import escape
from ksptrace.cli.common import add_params, output_target
from ksptrace.collectives import algorithms as alg
from ksptrace.collectives.memory import local_ranks
from ksptrace.collectives.params import (
    BACK_TO_BACK_OPERATIONS,
    COLLECTIVE_PARAMS,
    POINT_TO_POINT,
    message_sizes,
    parse_bytes,
    per_octave,
)
from ksptrace.errors import EnvironmentProblem, KsptraceError, UsageError
from ksptrace.harness.launching.mpienv import AGREED, launched_size, under_mpi_launcher
from ksptrace.params import resolve
from ksptrace.trace import publish, temporaries

FORCING_ENV = "KSPTRACE_COLLECTIVE_FORCING"
"""JSON of the Forcing the launching process chose, so that ranks need not run ompi_info."""
REJECTED = "An invalid value was supplied"
"""Open MPI's help text when an MCA variable's value is refused (it then runs its default)."""

PARAMS = COLLECTIVE_PARAMS
MEMORY_SHARE = 0.5
"""A run may use at most this share of the node's available memory for its buffers."""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "collectives",
        description="Time an MPI collective over message sizes (powers of two), per rank and "
        "repetition, checking every result, and write a collectives trace (HDF5).",
        allow_abbrev=False)
    add_params(p, PARAMS)
    p.add_argument("--np", type=int, default=None, help="launch mpiexec with this many ranks")
    p.add_argument("--out", default="traces", help="output folder, or a file name ending in .h5")
    p.add_argument("--overwrite", action="store_true", help="replace an existing trace file")
    p.add_argument("--tag", default="", help="suffix for the trace file name")
    p.add_argument("--mpiexec", default=None, help="mpiexec to use (default: from PATH)")
    p.add_argument("--quiet", action="store_true",
                   help="no estimate of the run's length and no progress lines on stderr (the "
                   "collectives then skip the probe that estimates it)")
    p.add_argument("--list-algorithms", action="store_true",
                   help="list the algorithms this MPI can force for --op, and exit")
    p.set_defaults(func=main)


def detect_library(mpiexec: str | None) -> str:
    """The MPI library the ranks will load, before MPI starts (it cannot be asked yet)."""
    if "OMPI_COMM_WORLD_SIZE" in os.environ:
        return "openmpi"
    if "PMI_RANK" in os.environ or "PMI_SIZE" in os.environ:
        return "mpich"
    from ksptrace.harness.launching.launch import find_mpiexec

    try:
        return find_mpiexec(mpiexec).flavor
    except EnvironmentProblem:
        return "unknown"


def mpich_names(library: str, op: str) -> tuple[str, ...] | None:
    """The installed MPICH's own algorithm list for ``op`` (None: not MPICH, or not found)."""
    coll = "iallreduce" if op == "iallreduce_overlap" else op
    if library != "mpich" or coll not in alg.MPICH_ALGORITHMS:
        return None
    from ksptrace.collectives.mpich import mpich_catalogue

    return mpich_catalogue(coll, alg.MPICH_ALGORITHMS[coll])


def choose_forcing(library: str, op: str, algorithm: str, segment_bytes: int) -> alg.Forcing:
    catalogue = alg.ompi_catalogue(op) if library == "openmpi" else None
    return alg.forcing_for(library, op, algorithm, catalogue, segment_bytes,
                           mpich_names(library, op))


def available_bytes() -> int | None:
    from ksptrace.collectives.memory import available_bytes as here

    return here()


def check_memory(op: str, max_bytes: int, nprocs: int, ranks_here: int) -> None:
    """Refuse, before anything runs, a size whose buffers would not fit on this node: each
    rank's peak (:func:`buffer_bytes`) times the ranks here, against half of what the node (and
    its control group) can give; the line says the largest --max-bytes that fits."""
    from ksptrace.collectives.operations import buffer_bytes  # numpy: not for --help

    need = buffer_bytes(op, max_bytes, nprocs) * ranks_here
    free = available_bytes()
    if free is None or need <= MEMORY_SHARE * free:
        return
    budget = MEMORY_SHARE * free
    fits = 1 << max(max_bytes.bit_length() - 1, 0)  # the largest power of two that fits
    while fits > 1 and buffer_bytes(op, fits, nprocs) * ranks_here > budget:
        fits //= 2
    fit = buffer_bytes(op, fits, nprocs) * ranks_here <= budget
    what = f"--max-bytes {_bytes(fits)} or less fits" if fit else "run fewer ranks on this node"
    raise UsageError(
        f"--max-bytes {max_bytes} needs {need / 2**20:.0f} MiB of buffers for {op} on "
        f"{ranks_here} ranks here, more than half of the {free / 2**20:.0f} MiB available; "
        f"lower --max-bytes ({what})")


def _bytes(n: int) -> str:
    for suffix, unit in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


def output_path(out: str, op: str, forcing: alg.Forcing, nprocs: int,
                sizes: tuple[int, ...], reps: int, tag: str) -> Path:
    target = output_target(out)
    if target.suffix == ".h5":
        return target
    parts = ["collectives", op, f"a{forcing.algorithm}-{forcing.name}"]
    if forcing.segment_bytes:
        parts.append(f"seg{forcing.segment_bytes}")
    parts += [f"P{nprocs}", f"m{sizes[0]}-{sizes[-1]}", f"R{reps}"]
    if tag:
        parts.append(tag)
    stem = "_".join(re.sub(r"[^A-Za-z0-9.+-]", "_", p) for p in parts)
    return target / (escape.bounded_stem(stem) + ".h5")


RANK_ENV = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")
"""Where a rank finds its rank before MPI starts (Open MPI, MPICH/Hydra, PMIx, srun)."""


def main(args: argparse.Namespace) -> int:
    """Checks before MPI starts fail on every rank alike: only rank 0 says why."""
    try:
        return _main(args)
    except KsptraceError as exc:
        rank = next((os.environ[k] for k in RANK_ENV if k in os.environ), "0")
        if under_mpi_launcher() and rank != "0" and not getattr(exc, AGREED, False):
            raise SystemExit(exc.exit_code) from None
        raise


def _main(args: argparse.Namespace) -> int:
    values = resolve(PARAMS, {p.name: getattr(args, p.name) for p in PARAMS})
    op = values["op"]
    sizes = message_sizes(op, parse_bytes(values["min_bytes"], "--min-bytes"),
                          parse_bytes(values["max_bytes"], "--max-bytes"),
                          per_octave(op, values["per_octave"]))
    launched = under_mpi_launcher()
    if args.np is not None and args.np < 1:
        raise UsageError(f"--np must be >= 1, got {args.np}")
    forcing = _forcing(values, args.mpiexec)
    if args.list_algorithms:
        catalogue = alg.ompi_catalogue(op) if forcing.library == "openmpi" else None
        for number, name in alg.algorithms_of(forcing.library, op, catalogue,
                                              mpich_names(forcing.library, op)).items():
            print(f"{number:>3} {name}")
        return 0
    nprocs = (launched_size() or 1) if launched else (args.np or 1)
    if launched and args.np is not None and launched_size() not in (None, args.np):
        raise UsageError(f"started under a launcher with {launched_size()} ranks but --np "
                         f"{args.np}; drop --np")
    if op in POINT_TO_POINT and nprocs != 2:
        raise UsageError(f"--op {op} measures messages between two ranks; run it with "
                         f"--np 2 (got {nprocs} ranks)")
    if values["mode"] == "back-to-back" and op not in BACK_TO_BACK_OPERATIONS:
        raise UsageError(f"--mode back-to-back times {', '.join(sorted(BACK_TO_BACK_OPERATIONS))}"
                         f" only, not {op}; use --mode per-call")
    check_memory(op, sizes[-1], nprocs, local_ranks(nprocs, dict(os.environ)))
    back = f"b2b{values['calls']}" if values["mode"] == "back-to-back" else ""
    path = output_path(args.out, op, forcing, nprocs, sizes, values["repetitions"],
                       "_".join(filter(None, (back, args.tag))))
    publish.check_destination(path, args.overwrite)
    temporaries.sweep(path.parent)
    if args.np is not None and not launched:
        return _launch(args, values, forcing, path)
    return _run_here(values, forcing, sizes, path, args.overwrite, args.quiet)


def _forcing(values: dict[str, Any], mpiexec: str | None) -> alg.Forcing:
    given = os.environ.get(FORCING_ENV)
    if given:
        data = json.loads(given)
        data["env"] = tuple(tuple(kv) for kv in data["env"])
        return alg.Forcing(**data)
    library = detect_library(mpiexec)
    return choose_forcing(library, values["op"], values["algorithm"], values["segment_bytes"])


def _run_here(values: dict[str, Any], forcing: alg.Forcing, sizes: tuple[int, ...],
              path: Path, overwrite: bool, quiet: bool) -> int:
    os.environ.update(dict(forcing.env))  # read by MPI_Init, which start_mpi runs
    from ksptrace.collectives.mpistart import start_mpi

    MPI = start_mpi()

    from ksptrace.collectives.bench import BenchSettings, execute
    from ksptrace.harness.launching.mpienv import agree_on_error, fail_together

    comm = MPI.COMM_WORLD
    with fail_together(comm):
        actual = alg.library_of(MPI.Get_library_version())
        agree_on_error(comm, UsageError(
            f"the algorithm was forced for {forcing.library} but the ranks run {actual}; "
            "pass the right --mpiexec") if forcing.forced and actual != forcing.library
            else None)
        settings = BenchSettings(
            operation=values["op"], sizes=sizes, repetitions=values["repetitions"],
            warmup=values["warmup"], forcing=forcing, out=path, overwrite=overwrite,
            compute_seconds=values["compute_us"] * 1e-6, test_calls=values["test_calls"],
            mode=values["mode"], calls=values["calls"], quiet=quiet)
        execute(settings, comm)
        if comm.Get_rank() == 0:
            note = f" ({forcing.note})" if forcing.note else ""
            print(f"wrote {path} ({values['op']}, algorithm {forcing.name}{note}, "
                  f"P={comm.Get_size()}, {len(sizes)} sizes x {values['repetitions']} reps)")
            if values["op"] == "iallreduce_overlap":
                print_overlap(path)
    return 0


def print_overlap(path: Path) -> None:
    """The overlap achieved per message size (median over repetitions)."""
    from ksptrace.studies.collectives.report import curves
    from ksptrace.trace import collectives

    frame = curves([collectives.read(path)])
    print(f"{'bytes':>10} {'comm us':>10} {'compute us':>11} {'overlapped us':>14} {'overlap':>8}")
    for row in frame.itertuples():
        print(f"{row.bytes:>10} {row.comm_alone_us:>10.1f} {row.compute_alone_us:>11.1f} "
              f"{row.median_us:>14.1f} {row.overlap:>8.0%}")


def child_arguments(values: dict[str, Any], path: Path, overwrite: bool,
                    quiet: bool = False) -> list[str]:
    out: list[str] = []
    for p in PARAMS:
        out += [p.flag, str(values[p.name])]
    out += ["--out", str(path)]
    return out + ["--overwrite"] * overwrite + ["--quiet"] * quiet


def _launch(args: argparse.Namespace, values: dict[str, Any], forcing: alg.Forcing,
            path: Path) -> int:
    from ksptrace.cli.run import _report_failure
    from ksptrace.collectives.bench import LAUNCH_ENV
    from ksptrace.harness.launching.launch import find_mpiexec, is_root
    from ksptrace.harness.launching.lifeline import Supervised
    from ksptrace.harness.petsc.petscenv import force_solver_env

    env = dict(os.environ)
    force_solver_env(env)
    env.update(dict(forcing.env))
    mpi = find_mpiexec(args.mpiexec)
    flags = mpi.flags(args.np, os.cpu_count() or 1, is_root())
    program = [sys.executable, "-m", "ksptrace", "collectives",
               *child_arguments(values, path, args.overwrite, args.quiet)]
    env[FORCING_ENV] = json.dumps(asdict(forcing))
    env[LAUNCH_ENV] = json.dumps({"launcher": f"mpiexec ({mpi.flavor})", "flags": flags,
                                  "command_line": shlex.join(["ksptrace", *sys.argv[1:]])})
    supervised = Supervised()
    with tempfile.TemporaryFile("w+") as out:
        relay = Relay(sys.stderr)
        try:
            code, _ = supervised.run(mpi.command(args.np, flags, program), env,
                                     stdout=out.fileno(), stderr=relay.write_end)
        except OSError as exc:
            raise EnvironmentProblem(f"cannot start {mpi.path}: {exc.strerror}") from None
        finally:
            err = relay.close()
        out.seek(0)
        said = out.read()
    if supervised.interrupted:
        print("ksptrace: interrupted; no trace was written", file=sys.stderr)
        return 130
    if code != 0:  # the ranks' own line (they read back what the library holds, MPI_T)
        return _report_failure(code, err)
    if REJECTED in err:  # the library's help message, when the ranks could not tell
        path.unlink(missing_ok=True)
        raise UsageError(f"{forcing.library} rejected algorithm {forcing.name} for "
                         f"{forcing.operation} ({_rejected_line(err)}); no trace kept")
    sys.stdout.write(said)  # the ranks' "wrote ..." only once the run is known good
    sys.stderr.write(err)
    return 0


class Relay:
    """The ranks' stderr, read as it comes: the estimate and progress lines (rank 0's,
    :mod:`ksptrace.collectives.eta`) go straight to ``sink``; the rest is kept for the end, where
    a failure is reported from it or it is written once the run is known good."""

    def __init__(self, sink: TextIO) -> None:
        from ksptrace.collectives.eta import PREFIX

        read_end, self.write_end = os.pipe()
        self.kept: list[str] = []

        def pump() -> None:
            with open(read_end, encoding="utf-8", errors="replace") as lines:
                for line in lines:
                    if line.startswith(PREFIX):
                        sink.write(line)
                        sink.flush()
                    else:
                        self.kept.append(line)

        self.thread = threading.Thread(target=pump, daemon=True)
        self.thread.start()

    def close(self) -> str:
        """After the launcher ended: everything else it wrote to stderr."""
        os.close(self.write_end)
        self.thread.join(timeout=10.0)  # a descendant still holding the pipe is not waited for
        return "".join(self.kept)


def _rejected_line(err: str) -> str:
    lines = err.splitlines()
    for i, line in enumerate(lines):
        if REJECTED in line:
            detail = [ln.strip() for ln in lines[i + 1:i + 5] if ":" in ln]
            return "; ".join(" ".join(d.split()) for d in detail[:2]) or line.strip()
    return "see its message"

