#!/usr/bin/python3
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
"""The benchmark with and without a rules file, side by side.

    tune_table.py RAW.csv [--md OUT.md]

RAW.csv is compare.py's raw.csv of a run with the selections offload (the defaults),
offload+coll_offload_rules_file=FILE (the rules) and tuned, interleaved, and optionally
offload+coll_offload_verbose=0 (the defaults again: the same code, so its ratio to the
defaults is the noise of the machine). Per collective, size and np: the median of each
over the runs, tuned/offload for both, and defaults/rules (above 1: the rules are
faster). Ends with the worst cell of each ratio.
"""
import argparse
import collections
import csv
import statistics


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("raw")
    p.add_argument("--md", help="also write the table here (markdown)")
    a = p.parse_args()
    runs = collections.defaultdict(list)
    sels = set()
    for r in csv.DictReader(open(a.raw)):
        runs[(int(r["np"]), r["coll"], int(r["bytes"]), r["selection"])].append(
            float(r["avg_us"]))
        sels.add(r["selection"])
    rules = [s for s in sels if "rules_file" in s]
    if len(rules) != 1 or "offload" not in sels or "tuned" not in sels:
        raise SystemExit("tune_table: wants the selections offload, tuned and one "
                         "offload+coll_offload_rules_file=FILE; got %s" % sorted(sels))
    rules = rules[0]
    again = "offload+coll_offload_verbose=0" if "offload+coll_offload_verbose=0" in sels \
        else None
    lines = ["| np | collective | bytes | tuned µs | defaults µs | rules µs | "
             "tuned/defaults | tuned/rules | defaults/rules |"
             + (" defaults/defaults again |" if again else ""),
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if again else "")]
    worst = {}
    cells = sorted({k[:3] for k in runs},
                   key=lambda k: (k[0], ["allreduce", "reduce", "bcast", "barrier"].index(k[1])
                                  if k[1] in ("allreduce", "reduce", "bcast", "barrier")
                                  else 9, k[2]))
    for np_, coll, b in cells:
        try:
            t, d, r = (statistics.median(runs[(np_, coll, b, s)])
                       for s in ("tuned", "offload", rules))
        except statistics.StatisticsError:
            continue
        ratios = {"tuned/defaults": t / d, "tuned/rules": t / r, "defaults/rules": d / r}
        extra = ""
        if again and runs.get((np_, coll, b, again)):
            ratios["defaults/defaults again"] = d / statistics.median(runs[(np_, coll, b, again)])
            extra = " %.2f |" % ratios["defaults/defaults again"]
        for name, v in ratios.items():
            if name not in worst or v < worst[name][0]:
                worst[name] = (v, "%s %d B np %d" % (coll, b, np_))
        lines.append("| %d | %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |%s"
                     % (np_, coll, b, t, d, r, ratios["tuned/defaults"],
                        ratios["tuned/rules"], ratios["defaults/rules"], extra))
    lines.append("")
    for name in ("tuned/defaults", "tuned/rules", "defaults/rules", "defaults/defaults again"):
        if name in worst:
            v, where = worst[name]
            lines.append("worst %s: %.2f (%s)" % (name, v, where))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
