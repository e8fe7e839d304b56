#!/usr/bin/env python3
"""Plots Tessera's speedup over PyTorch per suite entry, grouped by family, from the report.json
that `tessera bench` writes:

    python3 bench/plot_speedup.py REPORT.json OUT.png

One bar per entry and baseline (eager, torch.compile), on a log scale with a line at 1x (above it
Tessera is faster); entries are grouped and labelled by family in the suite's order.

Exit codes: 0 written; 3 matplotlib is not installed; 4 the report has no speedups (no PyTorch
baseline); 1 anything else. `tessera bench` notes in report.md why a plot is missing.
"""
import json
import sys


def main(argv):
    if len(argv) != 3:
        print("usage: plot_speedup.py REPORT.json OUT.png", file=sys.stderr)
        return 1
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter
    except ImportError as e:
        print("matplotlib is not installed (%s)" % e, file=sys.stderr)
        return 3

    with open(argv[1]) as f:
        report = json.load(f)
    families = list(report["summary"]["families"].keys())
    entries = [e for e in report["entries"]
               if e.get("speedup_vs_eager") is not None or e.get("speedup_vs_compiled") is not None]
    if not entries:
        print("no speedups to plot (the report has no PyTorch baseline numbers)", file=sys.stderr)
        return 4
    entries.sort(key=lambda e: (families.index(e["family"]) if e["family"] in families else len(families), e["id"]))

    width = 0.4
    fig, ax = plt.subplots(figsize=(max(8.0, 0.35 * len(entries) + 2), 6))
    xs = list(range(len(entries)))
    nan = float("nan")
    eager = [e["speedup_vs_eager"] if e.get("speedup_vs_eager") is not None else nan for e in entries]
    compiled = [e["speedup_vs_compiled"] if e.get("speedup_vs_compiled") is not None else nan for e in entries]
    ax.bar([x - width / 2 for x in xs], eager, width, label="vs eager", color="#4c72b0")
    ax.bar([x + width / 2 for x in xs], compiled, width, label="vs torch.compile", color="#dd8452")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    times = FuncFormatter(lambda v, _: "%g×" % v)
    ax.yaxis.set_major_formatter(times)
    ax.yaxis.set_minor_formatter(times)
    ax.set_ylabel("speedup (PyTorch time / Tessera time)")
    ax.set_xticks(xs)
    ax.set_xticklabels([e["id"] for e in entries], rotation=90, fontsize=6)

    # Family bands: a separator between groups and the family's name above them.
    start = 0
    for i in range(1, len(entries) + 1):
        if i == len(entries) or entries[i]["family"] != entries[start]["family"]:
            if i < len(entries):
                ax.axvline(i - 0.5, color="grey", linewidth=0.6, linestyle=":")
            ax.text((start + i - 1) / 2, 1.02, entries[start]["family"], transform=ax.get_xaxis_transform(),
                    ha="center", va="bottom", fontsize=8)
            start = i

    device = report.get("device", {}).get("name", "")
    ax.set_title("Tessera speedup over PyTorch by family: %s, %s" % (device, report.get("date", "")), pad=18)
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(argv[2], dpi=150)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
