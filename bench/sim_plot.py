#!/usr/bin/python3
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
"""Charts of bench/sim's CSV output.

  sim_plot.py validation CSV PNG   latency vs nodes, offload and software, the
                                   simulation's lines with seed 003's points
  sim_plot.py projection CSV PNG   latency vs ranks at each message size, best
                                   tree per mode, offload and software
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def validation(src, dst):
    rows = list(csv.DictReader(open(src)))
    sizes = sorted({int(r["bytes"]) for r in rows})
    fig, axes = plt.subplots(1, len(sizes), figsize=(4 * len(sizes), 4), sharey=True)
    if len(sizes) == 1:
        axes = [axes]
    for ax, size in zip(axes, sizes):
        sel = [r for r in rows if int(r["bytes"]) == size]
        nodes = [int(r["nodes"]) for r in sel]
        for col, label, color in (("sw", "software", "tab:red"), ("off", "offload", "tab:blue")):
            ax.plot(nodes, [float(r["sim_" + col]) for r in sel], "-", color=color,
                    label=label + " (sim)")
            ax.plot(nodes, [float(r["paper_" + col]) for r in sel], "o", color=color,
                    label=label + " (seed 003)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(nodes)
        ax.set_xticklabels([str(n) for n in nodes])
        ax.set_xlabel("nodes")
        ax.set_title("allreduce %d B" % size)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("latency (us)")
    axes[0].legend(fontsize=8)
    fig.suptitle("Simulated descriptor programs vs seed 003 (fitted on 16 nodes)")
    fig.tight_layout()
    fig.savefig(dst, dpi=100)


def projection(src, dst):
    rows = list(csv.DictReader(open(src)))
    best = {}
    for r in rows:
        for mode in ("offload_us", "software_us"):
            if not r.get(mode):
                continue
            key = (int(r["ppn"]), int(r["bytes"]), int(r["ranks"]), mode)
            v = float(r[mode])
            best[key] = min(best.get(key, v), v)
    ppns = sorted({k[0] for k in best})
    sizes = sorted({k[1] for k in best})
    fig, axes = plt.subplots(1, len(ppns), figsize=(6 * len(ppns), 4.5))
    if len(ppns) == 1:
        axes = [axes]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, ppn in zip(axes, ppns):
        for i, size in enumerate(sizes):
            for mode, style in (("offload_us", "-"), ("software_us", "--")):
                pts = sorted((k[2], v) for k, v in best.items()
                             if k[0] == ppn and k[1] == size and k[3] == mode)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style,
                            color=colors[i % len(colors)],
                            label="%d B %s" % (size, mode.split("_")[0]))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("ranks")
        ax.set_ylabel("latency (us)")
        ax.set_title("%d rank(s) per node%s" % (ppn, ", node-aware" if ppn > 1 else ""))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    fig.suptitle("Projected allreduce: offload (solid) vs software (dashed), best tree")
    fig.tight_layout()
    fig.savefig(dst, dpi=100)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("validation", "projection"):
        sys.exit(__doc__)
    {"validation": validation, "projection": projection}[sys.argv[1]](sys.argv[2], sys.argv[3])
