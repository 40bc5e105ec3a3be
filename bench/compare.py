#!/usr/bin/python3
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
"""Compare collective latencies of coll/offload against stock Open MPI components.

Runs coll_lat once per (np, repeat, collective, selection), where a "selection" is a set
of --mca arguments that picks the collective component under test:

    offload  --mca coll offload,tuned,libnbc,basic,self,inter
    tuned    --mca coll tuned,libnbc,basic,self,inter
    sm       --mca coll sm,tuned,libnbc,basic,self,inter --mca coll_sm_priority 100
    offload-rt  as offload, with --mca coll_offload_agent_preempt 2 (real-time agent)

The collectives are coll_lat's blocking allreduce, reduce, bcast and barrier; --colls can
add their nonblocking forms (iallreduce, ireduce, ibcast, ibarrier: MPI_I<coll> + MPI_Wait)
and persistent forms (pallreduce, preduce, pbcast, pbarrier: MPI_Start + MPI_Wait of a
request made once per size), which run under the same selections and get the same tables.

--placement and --mode go to coll_lat as -p and -t (buffer offsets from a page boundary,
and per-call instead of back-to-back timing) for every selection alike (with --overlap, to
its 8-byte coll_lat runs), and are named in the table titles.

The runs are interleaved (A B C A B C ...) and each size's latency is the median over
the repeats, which keeps a noisy machine from favouring whichever selection happened to
run during a quiet moment.  Results go to --out (default results/):

    raw.csv       every row coll_lat printed, tagged with np, selection and repeat
    latency.csv   the per-size medians that the tables and the chart show
    latency.md    one markdown table per (np, collective), ready to paste in a README
    latency.png   latency vs message size, log-log, one line per selection

A selection whose runs fail (e.g. mca_coll_offload.so is not installed yet) is reported
and shown as "n/a"; the script exits nonzero only if no selection produced any data.

--overlap measures nonblocking collectives instead (coll_overlap, next to coll_lat):
the overlap of MPI_Iallreduce (8 B .. 1 MiB) and MPI_Ibarrier with computation (and, for
MPI_Iallreduce, with a host that sleeps instead, and the time until the result is in
place while the host makes no MPI call), offload (default agent, and real-time agent)
against libnbc (the "libnbc" selection: tuned + libnbc, which serves every nonblocking
call there), plus the 8-byte
latency of MPI_Allreduce, MPI_Iallreduce + MPI_Wait and a persistent allreduce
(MPI_Start + MPI_Wait). It writes overlap.csv and overlap.md.

Needs matplotlib for the chart: run it with /usr/bin/python3 on Debian (the table and
CSV files are still written without it).
"""

import argparse
import csv
import datetime
import os
import platform
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time

COLLS = ("allreduce", "reduce", "bcast", "barrier")
# Also timed on request (--colls): coll_lat's nonblocking (MPI_I<coll> + MPI_Wait) and
# persistent (MPI_Start + MPI_Wait) forms of the four.  They run under the same selections
# as the blocking ones; in the stock selections libnbc serves both forms.
EXTRA_COLLS = ("iallreduce", "pallreduce", "ireduce", "ibcast", "ibarrier",
               "preduce", "pbcast", "pbarrier")
# No message: a single row with bytes = 0, charted as bars instead of a curve.
BARRIERS = ("barrier", "ibarrier", "pbarrier")
FALLBACK = "libnbc,basic,self,inter"
SELECTIONS = {
    "offload": ["--mca", "coll", "offload,tuned," + FALLBACK],
    "tuned": ["--mca", "coll", "tuned," + FALLBACK],
    # The same components: named for what serves nonblocking calls there.
    "libnbc": ["--mca", "coll", "tuned," + FALLBACK],
    "sm": ["--mca", "coll", "sm,tuned," + FALLBACK, "--mca", "coll_sm_priority", "100"],
    # Open MPI's hierarchical component (4.1 and 5.0), in front of tuned.
    "han": ["--mca", "coll", "han,tuned," + FALLBACK, "--mca", "coll_han_priority", "100"],
    # Open MPI 6's intra-node components (main, v6.0.x). Both default to priority 0, which
    # leaves them unused: raised here. acoll declines communicators below
    # coll_acoll_comm_size_thresh (16) ranks, so that is lowered; xhc without XPMEM (single
    # copy by CMA alone) crashes on (all)reduces above its copy-in-copy-out limit (4 KiB), so
    # that limit covers the sizes measured.
    "xhc": ["--mca", "coll", "xhc,tuned," + FALLBACK, "--mca", "coll_xhc_priority", "100",
            "--mca", "coll_xhc_allreduce_cico_max", "1048576",
            "--mca", "coll_xhc_reduce_cico_max", "1048576"],
    "acoll": ["--mca", "coll", "acoll,tuned," + FALLBACK, "--mca", "coll_acoll_priority", "100",
              "--mca", "coll_acoll_comm_size_thresh", "2"],
    # offload with its progress agent in the real-time class (coll_offload_agent_preempt=2)
    "offload-rt": ["--mca", "coll", "offload,tuned," + FALLBACK,
                   "--mca", "coll_offload_agent_preempt", "2"],
}
# Fixed colours/markers so a selection looks the same in every subplot and every run.
STYLE = {
    "offload": ("tab:red", "o"),
    "tuned": ("tab:blue", "s"),
    "libnbc": ("tab:purple", "D"),
    "sm": ("tab:green", "^"),
    "han": ("tab:purple", "D"),
    "offload-rt": ("tab:orange", "v"),
    "offload-base": ("tab:gray", "x"),
    "xhc": ("tab:brown", "P"),
    "acoll": ("tab:olive", "*"),
}
SYSTEM_COMPONENT_DIR = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"


def log(msg):
    """Progress and diagnostics go to stderr; stdout is kept for the final tables."""
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# Command line


def derive_selection(name):
    """BASE+PARAM=VALUE[+PARAM=VALUE...]: selection BASE with --mca coll_offload_PARAM
    VALUE added, e.g. offload+shm_budget=1g to compare two settings of one build."""
    base, *params = name.split("+")
    if base not in SELECTIONS or not params:
        return False
    args = list(SELECTIONS[base])
    for param in params:
        key, eq, value = param.partition("=")
        if not eq or not re.fullmatch(r"\w+", key) or not value:
            return False
        args += ["--mca", "coll_offload_" + key, value]
    SELECTIONS[name] = args
    STYLE.setdefault(name, ("tab:gray", "x"))
    return True


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(
        description="Side-by-side collective latency of several coll component selections.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--np", default="2",
                   help="number of ranks, or a comma-separated list (2,4,8): a table per np")
    p.add_argument("--colls", default=",".join(COLLS),
                   help="collectives to time; also on request: %s" % ", ".join(EXTRA_COLLS))
    p.add_argument("--sizes", default="4:1048576", help="MIN:MAX message bytes (coll_lat -m)")
    p.add_argument("--select", default="offload,tuned,sm",
                   help="selections to compare (%s); ratios are relative to the first"
                   % ",".join(SELECTIONS))
    p.add_argument("--repeat", type=int, default=3,
                   help="runs per selection, interleaved; the per-size median is reported")
    p.add_argument("--out", default="results", help="output directory")
    p.add_argument("--iters", type=int, help="fixed timed iterations (coll_lat -i)")
    p.add_argument("--warmup", type=int, help="fixed warmup iterations (coll_lat -x)")
    p.add_argument("--placement", metavar="S/R[,S1/R1]",
                   help="buffer offsets from a page boundary, send/receive, optionally "
                   "others for the odd ranks (coll_lat -p; default page-aligned)")
    p.add_argument("--mode", choices=("b2b", "percall"),
                   help="timing (coll_lat -t): back-to-back calls timed as one (coll_lat's "
                   "default), or each call alone with a barrier between")
    p.add_argument("--bin", help="coll_lat executable (default: coll_lat next to this script, "
                   "then ./bench/coll_lat, then ./coll_lat)")
    p.add_argument("--mpirun", default="mpirun", help="launcher")
    p.add_argument("--mpirun-args", default="", help="extra mpirun arguments (one string)")
    p.add_argument("--env-component-path", metavar="DIR",
                   help="also load MCA components from DIR (uninstalled build of "
                   "mca_coll_offload.so) via OMPI_MCA_mca_base_component_path")
    p.add_argument("--base-component-path", metavar="DIR",
                   help="adds the selection offload-base: offload with mca_coll_offload.so "
                   "loaded from DIR (a build of another commit), for before/after runs "
                   "(--select offload-base,offload: the ratio is after over before)")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds before one mpirun is considered hung and killed")
    p.add_argument("--overlap", action="store_true",
                   help="measure nonblocking overlap (coll_overlap) and 8-byte blocking / "
                   "nonblocking / persistent latency instead; --select defaults to "
                   "offload,offload-rt,libnbc and --sizes to 8:1048576")
    a = p.parse_args(argv)
    if a.overlap:
        if "--select" not in " ".join(argv):
            a.select = "offload,offload-rt,libnbc"
        if "--sizes" not in " ".join(argv):
            a.sizes = "8:1048576"

    try:
        a.np = [int(n) for n in a.np.split(",") if n.strip()]
    except ValueError:
        p.error("--np wants an integer or a comma-separated list of integers")
    if not a.np or min(a.np) < 1:
        p.error("--np values must be >= 1")
    a.colls = [c for c in a.colls.split(",") if c]
    a.select = [s for s in a.select.split(",") if s]
    for c in a.colls:
        if c not in COLLS + EXTRA_COLLS:
            p.error("unknown collective %r (choose from %s)"
                    % (c, ", ".join(COLLS + EXTRA_COLLS)))
    if a.base_component_path:
        base = os.path.abspath(a.base_component_path)
        if not os.path.exists(os.path.join(base, "mca_coll_offload.so")):
            p.error("%s has no mca_coll_offload.so" % base)
        # on the command line, so it wins over the environment's path for these runs
        SELECTIONS["offload-base"] = SELECTIONS["offload"] + [
            "--mca", "mca_base_component_path", SYSTEM_COMPONENT_DIR + ":" + base]
    for s in a.select:
        if s not in SELECTIONS and not derive_selection(s):
            p.error("unknown selection %r (choose from %s, or BASE+PARAM=VALUE...)"
                    % (s, ", ".join(SELECTIONS)))
    if len(set(a.select)) != len(a.select) or len(set(a.colls)) != len(a.colls):
        p.error("--select and --colls must not repeat a name")
    if a.repeat < 1:
        p.error("--repeat must be >= 1")
    if not re.fullmatch(r"\d*:?\d*", a.sizes) or a.sizes in ("", ":"):
        p.error("--sizes wants MIN:MAX in bytes")
    if a.placement is not None and not re.fullmatch(r"\d+(/\d+)?(,\d+(/\d+)?)?",
                                                    a.placement):
        p.error("--placement wants S/R or S/R,S1/R1 (bytes after a page boundary)")
    # What every coll_lat run gets, and how the titles name it ("" for coll_lat's defaults).
    a.lat_args, named = [], []
    if a.mode is not None:
        a.lat_args += ["-t", a.mode]
        named.append("%s timing" % a.mode)
    if a.placement is not None:
        a.lat_args += ["-p", a.placement]
        named.append("buffers at page + %s" % a.placement)
    a.measured = ", ".join(named)

    if a.bin is None:
        candidates = [os.path.join(here, "coll_lat"), os.path.join("bench", "coll_lat"),
                      "coll_lat"]
        a.bin = next((c for c in candidates if os.access(c, os.X_OK)), candidates[0])
    a.bin = os.path.abspath(a.bin)
    if not os.access(a.bin, os.X_OK):
        p.error("coll_lat not found at %s: build it (make -C bench) or pass --bin" % a.bin)
    a.overlap_bin = os.path.join(os.path.dirname(a.bin), "coll_overlap")
    if a.overlap and not os.access(a.overlap_bin, os.X_OK):
        p.error("coll_overlap not found at %s: build it (make -C bench)" % a.overlap_bin)
    return a


def component_env(extra_dir):
    """Environment for mpirun; with extra_dir, the component path keeps the system dir."""
    env = dict(os.environ)
    if extra_dir:
        system_dir = SYSTEM_COMPONENT_DIR
        try:
            out = subprocess.run(["ompi_info", "--path", "pkglibdir"], capture_output=True,
                                 text=True, timeout=30).stdout
            m = re.search(r"Pkglibdir:\s*(\S+)", out)
            if m:
                system_dir = m.group(1)
        except (OSError, subprocess.SubprocessError):
            pass
        extra_dir = os.path.abspath(extra_dir)
        if not os.path.exists(os.path.join(extra_dir, "mca_coll_offload.so")):
            log("warning: %s has no mca_coll_offload.so" % extra_dir)
        env["OMPI_MCA_mca_base_component_path"] = system_dir + ":" + extra_dir
    return env


def mpirun_cmd(a, np, selection, tail, binary=None):
    cmd = [a.mpirun, "-np", str(np)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    # Harmless when np fits the cores (binding is unchanged), required when it does not.
    cmd.append("--oversubscribe")
    cmd += SELECTIONS[selection] + shlex.split(a.mpirun_args)
    return cmd + [binary or a.bin] + tail


# ---------------------------------------------------------------------------------------
# Running


class RunResult:
    def __init__(self, rc, out, err, seconds, timed_out):
        self.rc, self.out, self.err = rc, out, err
        self.seconds, self.timed_out = seconds, timed_out

    @property
    def ok(self):
        return self.rc == 0 and not self.timed_out


def run(cmd, env, timeout):
    """Run one mpirun in its own process group so a hung job can be killed as a whole."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    timed_out = False
    out = err = ""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
                out, err = proc.communicate(timeout=10)
                break
            except ProcessLookupError:
                out, err = proc.communicate()
                break
            except subprocess.TimeoutExpired:
                continue
    return RunResult(proc.returncode, out or "", err or "", time.monotonic() - t0, timed_out)


def diagnose(res, timeout):
    """One line saying why a run failed, from the launcher's and coll_lat's messages."""
    err = res.err
    if res.timed_out:
        return "timed out after %g s (hang?); killed" % timeout
    if "mca_coll_base_open() failed" in err or 'Returned "Not found"' in err:
        return ("a requested coll component was not found (not installed? "
                "try --env-component-path DIR)")
    m = re.search(r"coll_lat: .*wrong result.*", err)
    if m:
        return "WRONG RESULTS: " + m.group(0)
    m = re.search(r"coll_lat: .*", err)
    if m:
        return m.group(0)
    m = re.search(r"signal (\d+) \(([^)]*)\)", err)
    if m:
        return "a rank died with signal %s (%s)" % m.groups()
    if "not enough slots" in err:
        return "not enough slots for this np (see --mpirun-args)"
    lines = [ln.strip() for ln in err.splitlines() if ln.strip() and not ln.startswith("---")]
    tail = " | ".join(lines[-3:]) if lines else "no error output"
    return "mpirun exited with status %s: %s" % (res.rc, tail)


def parse_rows(coll, text):
    """The CSV rows coll_lat printed for coll: (bytes, avg, min, max, iters) tuples."""
    rows = []
    for line in text.splitlines():
        f = line.strip().split(",")
        if len(f) != 6 or f[0] != coll:
            continue  # header, or something the launcher wrote to stdout
        try:
            rows.append((int(f[1]), float(f[2]), float(f[3]), float(f[4]), int(f[5])))
        except ValueError:
            continue
    return rows


def preflight(a, np, selection, env):
    """One tiny verbose run: does the selection start, and is its first component the one
    MPI_COMM_WORLD actually uses?  Returns (error or None, warning or None)."""
    primary = SELECTIONS[selection][2].split(",")[0]
    cmd = mpirun_cmd(a, np, selection, ["-c", "barrier", "-i", "1", "-x", "0", "-f", "csv"])
    cmd[cmd.index(a.bin):cmd.index(a.bin)] = ["--mca", "coll_base_verbose", "20"]
    res = run(cmd, env, a.timeout)
    if not res.ok:
        return diagnose(res, a.timeout), None

    # comm_select prints "selecting NAME, priority P, Enabled|Disabled" for each
    # communicator; follow each process's current communicator to keep MPI_COMM_WORLD's.
    current, enabled = {}, {}
    for line in res.out.splitlines() + res.err.splitlines():
        m = re.match(r"\[([^\]]+)\] coll:base:comm_select: (.*)", line)
        if not m:
            continue
        proc, msg = m.groups()
        c = re.match(r"new communicator: (\S+)", msg)
        if c:
            current[proc] = c.group(1)
            continue
        s = re.match(r"selecting\s+(\S+), priority\s+(-?\d+), Enabled", msg)
        if s and current.get(proc) == "MPI_COMM_WORLD":
            enabled.setdefault(proc, {})[s.group(1)] = int(s.group(2))
    if not enabled:
        return None, None  # no verbose output to judge by; trust the selection
    for comps in enabled.values():
        if primary not in comps:
            return None, ("%s is loaded but declined MPI_COMM_WORLD: this column measures "
                          "the fallback components" % primary)
        best = max(comps.values())
        if comps[primary] < best:
            others = ", ".join("%s %d" % kv for kv in sorted(comps.items()))
            return None, ("%s is not the highest-priority component on MPI_COMM_WORLD (%s): "
                          "this column may measure others" % (primary, others))
    return None, None


# ---------------------------------------------------------------------------------------
# Tables and chart


def runs_text(repeat, interleaved=False):
    if repeat == 1:
        return "a single run"
    return "median of %d %sruns" % (repeat, "interleaved " if interleaved else "")


def fmt_bytes(n):
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return "%d%s" % (n // scale, unit)
    return str(n)


def fmt_us(v):
    if v is None:
        return "n/a"
    return "%.2f" % v if v < 1000 else "%.0f" % v


def markdown_table(header, rows, align):
    """Pipe table padded so the raw text lines up as well as the rendered one."""
    cells = [header] + rows
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(r):
        return "| " + " | ".join(c.rjust(w) if al == "r" else c.ljust(w)
                                 for c, w, al in zip(r, widths, align)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if al == "r" else ("-" * (w + 2))
                          for w, al in zip(widths, align)) + "|"
    return "\n".join([line(header), rule] + [line(r) for r in rows])


def paired_ratio(by_rep, np, s, first, coll, b):
    """Median over repeats of run k's latency of `s` over run k's of `first`: the two ran
    next to each other, so each ratio compares runs under the same machine state (this
    kind of VM moves between states that differ by 2x for small messages)."""
    x = by_rep.get((np, s, coll), {}).get(b, {})
    y = by_rep.get((np, first, coll), {}).get(b, {})
    pairs = [x[k] / y[k] for k in x if k in y and y[k] > 0]
    return statistics.median(pairs) if pairs else None


def crowded(np):
    """More ranks than this machine has cores: every rank shares its core."""
    return np > (os.cpu_count() or 1)


def np_label(np):
    return "%d, oversubscribed: %d cores" % (np, os.cpu_count() or 1) if crowded(np) else str(np)


def worst_ratio(a, medians, by_rep):
    """The first selection against the fastest of the others, cell by cell (the paired
    ratio of the fastest other): the smallest such ratio over every np, collective and
    size, and where it is. Below 1 the first selection is slower there."""
    first = a.select[0]
    others = [s for s in a.select[1:] if not s.startswith(first)]
    worst = None
    for np in a.np:
        for coll in a.colls:
            for b in sorted(medians.get((np, first, coll), {})):
                best, best_s = None, None
                for s in others:
                    v = medians.get((np, s, coll), {}).get(b)
                    if v is not None and (best is None or v < best):
                        best, best_s = v, s
                if best is None:
                    continue
                r = paired_ratio(by_rep, np, best_s, first, coll, b)
                if r is None:
                    r = best / medians[(np, first, coll)][b]
                if worst is None or r < worst[0]:
                    worst = (r, np, coll, b, best_s)
    return worst


def measured_suffix(a):
    """'; percall timing, buffers at page + 16/0' for a title, when asked for."""
    return "; " + a.measured if a.measured else ""


def build_tables(a, medians, notes, by_rep=None):
    first = a.select[0]
    out = []
    for np in a.np:
        if len(a.np) > 1:
            out.append("## np = %s\n" % np_label(np))
        for coll in a.colls:
            sizes = sorted({b for s in a.select for b in medians.get((np, s, coll), {})})
            header = ["bytes"] + ["%s (µs)" % s for s in a.select]
            header += ["%s/%s" % (s, first) for s in a.select[1:]]
            rows = []
            for b in sizes:
                vals = [medians.get((np, s, coll), {}).get(b) for s in a.select]
                row = [str(b)] + [fmt_us(v) for v in vals]
                for s, v in zip(a.select[1:], vals[1:]):
                    r = paired_ratio(by_rep, np, s, first, coll, b) if by_rep else None
                    if r is None and v is not None and vals[0] is not None and vals[0] > 0:
                        r = v / vals[0]
                    row.append("%.2f" % r if r is not None else "n/a")
                rows.append(row)
            if not rows:
                rows = [["n/a"] * len(header)]
            out.append("### %s (np = %s%s)\n" % (coll, np_label(np), measured_suffix(a)))
            out.append(markdown_table(header, rows, ["r"] * len(header)))
            for s in a.select:
                if (np, s, coll) in notes:
                    out.append("\n*%s: %s*" % (s, notes[(np, s, coll)]))
            out.append("")
    return "\n".join(out)


def coll_title(coll):
    """The MPI call a coll_lat name times: a p-form is the persistent MPI_<Coll>_init."""
    if coll in EXTRA_COLLS and coll[0] == "p" and coll[1:] in COLLS:
        return "MPI_%s_init (Start + Wait)" % coll[1:].capitalize()
    return "MPI_%s" % coll.capitalize()


def make_chart(a, medians, path, stamp):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter, LogFormatter, LogLocator, NullFormatter
    except ImportError:
        log("matplotlib not available (run with /usr/bin/python3): no chart written")
        return False

    class PlainLogFormatter(LogFormatter):
        """LogFormatter's choice of which ticks to label, printed as 0.5 instead of 5e-01."""

        def __call__(self, x, pos=None):
            return "%g" % x if super().__call__(x, pos) else ""

    # One np: the collectives in a 2x2 grid.  Several: a row per np, a column per coll.
    n = len(a.colls)
    if len(a.np) == 1:
        ncols = 1 if n == 1 else 2
        nrows = (n + ncols - 1) // ncols
        place = {(a.np[0], c): divmod(i, ncols) for i, c in enumerate(a.colls)}
    else:
        nrows, ncols = len(a.np), n
        place = {(np, c): (r, i) for r, np in enumerate(a.np) for i, c in enumerate(a.colls)}
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.0 * ncols, 4.4 * nrows), squeeze=False)
    for r in range(nrows):
        for c in range(ncols):
            if (r, c) not in place.values():
                axes[r][c].set_visible(False)

    for (np, coll), (r, c) in place.items():
        ax = axes[r][c]
        title = coll_title(coll) + ("" if len(a.np) == 1 else "  (np = %d)" % np)
        ax.set_title(title, fontsize=12, fontweight="bold")
        if coll in BARRIERS:
            # No message size: one bar per selection with its latency printed on top.
            # A selection without data keeps its slot, labelled n/a.
            names = list(a.select)
            vals = [next(iter(medians[(np, s, coll)].values()))
                    if medians.get((np, s, coll)) else 0.0 for s in names]
            bars = ax.bar(names, vals, color=[STYLE[s][0] for s in names], width=0.55)
            for bar, s, v in zip(bars, names, vals):
                label = "%.2f µs" % v if medians.get((np, s, coll)) else "n/a"
                ax.annotate(label, (bar.get_x() + bar.get_width() / 2, v),
                            ha="center", va="bottom", fontsize=10, xytext=(0, 3),
                            textcoords="offset points")
            if max(vals) > 0:
                ax.set_ylim(0, max(vals) * 1.2)
            ax.set_ylabel("latency (µs)")
            ax.set_xlabel("selection")
            ax.grid(axis="y", alpha=0.3)
        else:
            for s in a.select:
                data = medians.get((np, s, coll), {})
                if not data:
                    ax.plot([], [], " ", label="%s: n/a" % s)  # legend entry only
                    continue
                xs = sorted(data)
                color, marker = STYLE[s]
                ax.plot(xs, [data[x] for x in xs], marker=marker, color=color, label=s,
                        markersize=5, linewidth=1.6)
            if not any(medians.get((np, s, coll)) for s in a.select):
                ax.text(0.5, 0.5, "no data: every run failed", transform=ax.transAxes,
                        ha="center", va="center", fontsize=11, color="dimgray")
                ax.legend(loc="upper left", fontsize=9)
                continue  # log axes need positive data
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.xaxis.set_major_locator(LogLocator(base=4, numticks=16))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_bytes(int(round(v)))))
            # Plain numbers; minor ticks get labels too when the span is under a decade
            # or two, so a flat curve still has a readable scale.
            ax.yaxis.set_major_formatter(PlainLogFormatter(labelOnlyBase=False))
            ax.yaxis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False,
                                                           minor_thresholds=(2, 0.5)))
            ax.set_xlabel("message size (bytes)")
            ax.set_ylabel("latency (µs)")
            ax.grid(which="major", alpha=0.35)
            ax.grid(which="minor", alpha=0.12)
            ax.legend(loc="upper left", fontsize=9)

    np_text = ("np = %d" % a.np[0]) if len(a.np) == 1 else "np = " + ", ".join(map(str, a.np))
    fig.suptitle("Collective latency, %s%s, %s — %s, %s"
                 % (np_text, measured_suffix(a).replace(";", ","), runs_text(a.repeat),
                    platform.node(), stamp), fontsize=13)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------
# Overlap mode


OVERLAP_COLLS = ("iallreduce", "ibarrier")
LAT8_KINDS = ("allreduce", "iallreduce", "pallreduce")


def parse_overlap_rows(coll, text):
    """coll_overlap CSV rows: (bytes, pure, compute, total, overlap%, iters, nohost,
    host_cost%)."""
    rows = []
    for line in text.splitlines():
        f = line.strip().split(",")
        if len(f) != 9 or f[0] != coll:
            continue
        try:
            rows.append((int(f[1]), float(f[2]), float(f[3]), float(f[4]), float(f[5]),
                         int(f[6]), float(f[7]), float(f[8])))
        except ValueError:
            continue
    return rows


def run_overlap(a, env):
    """Interleaved runs of coll_overlap and 8-byte coll_lat; returns the markdown."""
    ovl = {}   # (np, sel, coll) -> {bytes: [(pure, compute, total, overlap, nohost, cost)]}
    lat = {}   # (np, sel, kind) -> [us]
    raw = []
    notes = {}
    for np in a.np:
        for rep in range(1, a.repeat + 1):
            for coll in OVERLAP_COLLS + ("iallreduce-sleep",):
                for s in a.select:
                    if (np, s, coll) in notes:
                        continue
                    name = coll.split("-")[0]
                    tail = ["-c", name, "-m", a.sizes, "-f", "csv"]
                    if coll.endswith("-sleep"):
                        tail += ["-w", "sleep"]
                    res = run(mpirun_cmd(a, np, s, tail, a.overlap_bin), env, a.timeout)
                    rows = parse_overlap_rows(name, res.out)
                    for b, pure, comp, tot, o, iters, alone, cost in rows:
                        ovl.setdefault((np, s, coll), {}).setdefault(b, []).append(
                            (pure, comp, tot, o, alone, cost))
                        raw.append([np, s, rep, coll, b, pure, comp, tot, o, iters, alone,
                                    cost])
                    status = "%d sizes" % len(rows)
                    if not res.ok or not rows:
                        why = diagnose(res, a.timeout) if not res.ok else "no output rows"
                        notes[(np, s, coll)] = "run %d failed (%s)" % (rep, why)
                        status = "FAILED: " + why
                    log("np=%d run %d/%d %-10s %-8s %6.1f s  %s"
                        % (np, rep, a.repeat, coll, s, res.seconds, status))
            for kind in LAT8_KINDS:
                for s in a.select:
                    tail = ["-c", kind, "-m", "8:8", "-f", "csv", "-i", "20000"] + a.lat_args
                    res = run(mpirun_cmd(a, np, s, tail), env, a.timeout)
                    rows = parse_rows(kind, res.out)
                    if res.ok and rows:
                        lat.setdefault((np, s, kind), []).append(rows[0][1])
                        raw.append([np, s, rep, kind, 8, rows[0][1], "", "", "", rows[0][4],
                                    "", ""])
                    log("np=%d run %d/%d %-10s %-8s %6.1f s  %s"
                        % (np, rep, a.repeat, kind + " 8B", s, res.seconds,
                           "ok" if res.ok and rows else "FAILED"))

    def med(vals, i):
        return statistics.median(v[i] for v in vals)

    def fmt_alone(vals):
        # -1: not done without MPI calls; the median run decides
        m = statistics.median(v[4] if v[4] >= 0 else 1e30 for v in vals)
        return "never" if m >= 1e30 else "%.1f" % m

    out = []
    for np in a.np:
        if len(a.np) > 1:
            out.append("## np = %d\n" % np)
        for coll in OVERLAP_COLLS:
            sizes = sorted({b for s in a.select for b in ovl.get((np, s, coll), {})})
            sleep = "iallreduce" == coll
            header = ["bytes"] + ["%s overlap %%" % s for s in a.select]
            if sleep:
                header += ["%s overlap %%, host sleeps" % s for s in a.select]
                header += ["%s done w/o MPI (µs)" % s for s in a.select]
            header += ["%s host cost %%" % s for s in a.select]
            header += ["%s pure (µs)" % s for s in a.select]
            rows = []
            for b in sizes:
                row = [str(b)]
                for s in a.select:
                    vals = ovl.get((np, s, coll), {}).get(b)
                    row.append("%.0f" % med(vals, 3) if vals else "n/a")
                if sleep:
                    for s in a.select:
                        vals = ovl.get((np, s, coll + "-sleep"), {}).get(b)
                        row.append("%.0f" % med(vals, 3) if vals else "n/a")
                    for s in a.select:
                        vals = ovl.get((np, s, coll), {}).get(b)
                        row.append(fmt_alone(vals) if vals else "n/a")
                for s in a.select:
                    vals = ovl.get((np, s, coll), {}).get(b)
                    row.append("%.0f" % med(vals, 5) if vals else "n/a")
                for s in a.select:
                    vals = ovl.get((np, s, coll), {}).get(b)
                    row.append("%.2f" % med(vals, 0) if vals else "n/a")
                rows.append(row)
            if not rows:
                rows = [["n/a"] * len(header)]
            out.append("### MPI_%s overlap with computation (np = %d)\n"
                       % (coll.capitalize(), np))
            out.append(markdown_table(header, rows, ["r"] * len(header)))
            for s in a.select:
                if (np, s, coll) in notes:
                    out.append("\n*%s: %s*" % (s, notes[(np, s, coll)]))
            out.append("")
        header = ["selection", "MPI_Allreduce (µs)", "MPI_Iallreduce + Wait (µs)",
                  "persistent Start + Wait (µs)"]
        rows = []
        for s in a.select:
            rows.append([s] + [fmt_us(statistics.median(lat[(np, s, k)]))
                               if lat.get((np, s, k)) else "n/a" for k in LAT8_KINDS])
        out.append("### 8-byte allreduce: blocking, nonblocking, persistent (np = %d%s)\n"
                   % (np, measured_suffix(a)))
        out.append(markdown_table(header, rows, ["l", "r", "r", "r"]))
        out.append("")

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "overlap.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["np", "selection", "run", "coll", "bytes", "pure_us", "compute_us",
                    "total_us", "overlap_pct", "iters", "nohost_us", "host_cost_pct"])
        w.writerows(raw)
    head = ["# Nonblocking overlap: %s" % " vs ".join(a.select), ""]
    head.append("%s, Open MPI %s, %s of `coll_overlap` (measured as OSU does: overlap %% = "
                "100 (1 - (total - compute) / pure), clamped to 0..100, with compute timed "
                "inside the overlapped iterations; \"host cost\": how much longer that compute "
                "took than alone, i.e. the CPU time a progress thread took from the host; "
                "\"done w/o MPI\": median time from the post until the result is in place "
                "while the host computes and makes no MPI call) and of 8-byte `coll_lat`."
                % (platform.node(), ompi_version(a.mpirun),
                   runs_text(a.repeat, interleaved=True)))
    head.append("")
    for s in a.select:
        head.append("- `%s`: `%s`" % (s, " ".join(SELECTIONS[s])))
    head.append("")
    markdown = "\n".join(head) + "\n" + "\n".join(out)
    with open(os.path.join(a.out, "overlap.md"), "w") as f:
        f.write(markdown)
    return markdown, bool(ovl)


def ompi_version(mpirun):
    try:
        out = subprocess.run([mpirun, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
        m = re.search(r"\(Open MPI\)\s*(\S+)", out)
        return m.group(1) if m else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def main(argv):
    a = parse_args(argv)
    env = component_env(a.env_component_path)
    t_start = time.monotonic()
    if a.overlap:
        markdown, have = run_overlap(a, env)
        print(markdown)
        log("wrote %s/overlap.csv, overlap.md" % a.out)
        log("total runtime %.1f s" % (time.monotonic() - t_start))
        return 0 if have else 1
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    tail = ["-m", a.sizes, "-f", "csv"] + a.lat_args
    if a.iters is not None:
        tail += ["-i", str(a.iters)]
    if a.warmup is not None:
        tail += ["-x", str(a.warmup)]

    samples = {}   # (np, sel, coll) -> {bytes: [avg_us of each run]}
    by_rep = {}    # (np, sel, coll) -> {bytes: {run: avg_us}}
    raw = []       # rows of raw.csv
    notes = {}     # (np, sel, coll) -> why the data is missing or partial
    warnings = {}  # (np, sel) -> preflight warning
    launches = 0

    for np in a.np:
        active = []
        for s in a.select:
            err, warn = preflight(a, np, s, env)
            launches += 1
            if err:
                log("np=%d %-8s FAILED to start: %s" % (np, s, err))
                for coll in a.colls:
                    notes[(np, s, coll)] = "n/a, " + err
                continue
            if warn:
                log("np=%d %-8s WARNING: %s" % (np, s, warn))
                warnings[(np, s)] = warn
            active.append(s)

        for rep in range(1, a.repeat + 1):
            for coll in a.colls:
                for s in active:
                    key = (np, s, coll)
                    if key in notes:
                        continue  # failed in an earlier repeat: do not wait for it again
                    cmd = mpirun_cmd(a, np, s, ["-c", coll] + tail)
                    res = run(cmd, env, a.timeout)
                    launches += 1
                    rows = parse_rows(coll, res.out)
                    for b, avg, lo, hi, iters in rows:
                        samples.setdefault(key, {}).setdefault(b, []).append(avg)
                        by_rep.setdefault(key, {}).setdefault(b, {})[rep] = avg
                        raw.append([np, s, rep, coll, b, avg, lo, hi, iters])
                    status = "%d sizes" % len(rows)
                    if not res.ok or not rows:
                        why = diagnose(res, a.timeout) if not res.ok else "no output rows"
                        notes[key] = "run %d failed (%s); later runs skipped" % (rep, why)
                        status = "FAILED: " + why
                    log("np=%d run %d/%d %-9s %-8s %6.1f s  %s"
                        % (np, rep, a.repeat, coll, s, res.seconds, status))

    # Median over the repeats, per size.
    medians = {k: {b: statistics.median(v) for b, v in d.items()} for k, d in samples.items()}

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "raw.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["np", "selection", "run", "coll", "bytes", "avg_us", "min_us", "max_us",
                    "iters"])
        w.writerows(raw)
    with open(os.path.join(a.out, "latency.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["np", "coll", "bytes", "selection", "median_avg_us", "runs"])
        for (np, s, coll), d in sorted(samples.items()):
            for b in sorted(d):
                w.writerow([np, coll, b, s, "%.3f" % medians[(np, s, coll)][b], len(d[b])])

    tables = build_tables(a, medians, notes, by_rep)
    head = ["# Collective latency: %s" % " vs ".join(a.select), ""]
    head.append("%s, Open MPI %s, np = %s, %s; %s of `coll_lat` per selection "
                "(average over ranks of the per-call latency)."
                % (platform.node(), ompi_version(a.mpirun), ", ".join(map(str, a.np)), stamp,
                   runs_text(a.repeat, interleaved=True)))
    head.append("Ratios are `selection / %s` latency, the median over the runs of each "
                "run's ratio to the %s run next to it: above 1 means %s is faster." %
                (a.select[0], a.select[0], a.select[0]))
    head.append("")
    for s in a.select:
        head.append("- `%s`: `%s`" % (s, " ".join(SELECTIONS[s])))
    for (np, s), warn in sorted(warnings.items()):
        head.append("- **warning** (np = %d, %s): %s" % (np, s, warn))
    head.append("")
    markdown = "\n".join(head) + "\n" + tables
    worst = worst_ratio(a, medians, by_rep)
    if worst is not None:
        r, wnp, wcoll, wb, ws = worst
        markdown += ("\n**Worst cell**: %s / %s = %.2f (%s, %sB, np = %s; below 1: %s is "
                     "slower there)\n" % (ws, a.select[0], r, wcoll, fmt_bytes(wb),
                                          np_label(wnp), a.select[0]))
    with open(os.path.join(a.out, "latency.md"), "w") as f:
        f.write(markdown)

    charted = make_chart(a, medians, os.path.join(a.out, "latency.png"), stamp)

    print(markdown)
    if worst is not None:
        log("worst %s/%s ratio %.2f: %s %sB at np %s" % (worst[4], a.select[0], worst[0],
                                                        worst[2], fmt_bytes(worst[3]),
                                                        np_label(worst[1])))
    have_data = {s for (_, s, _) in samples}
    for s in a.select:
        if s not in have_data:
            log("%s: no data (every run failed); column is n/a" % s)
    log("wrote %s/raw.csv, latency.csv, latency.md%s" % (a.out, ", latency.png" if charted
                                                         else ""))
    log("total runtime %.1f s, %d mpirun launches" % (time.monotonic() - t_start, launches))
    return 0 if have_data else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
