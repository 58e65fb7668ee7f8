"""Small matplotlib figures logged as MLflow artifacts (people would rather look than read)."""

from __future__ import annotations

from collections import Counter

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def bar_chart(counts: Counter | dict, title: str, xlabel: str):
    fig, ax = plt.subplots(figsize=(7, 3.5))
    keys = sorted(counts, key=str)
    ax.bar([str(k) for k in keys], [counts[k] for k in keys], color="#4C72B0")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    ax.tick_params(axis="x", rotation=35)
    fig.tight_layout()
    return fig


def line_chart(series: dict[str, list[tuple[float, float]]], title: str, xlabel: str, ylabel: str):
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for name, points in series.items():
        if points:
            xs, ys = zip(*points)
            ax.plot(xs, ys, marker="o", label=name)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if len(series) > 1:
        ax.legend()
    fig.tight_layout()
    return fig


def close(fig) -> None:
    plt.close(fig)


def rollout_composition(counts: dict[str, int], title: str):
    """LEAP Fig. 4 kind: share of nonzero-advantage rollouts by outcome and advantage sign, per pass-rate bucket.

    counts keys: "<bucket>|<outcome>|<sign>"."""
    buckets = sorted({k.split("|")[0] for k in counts})
    kinds = sorted({"|".join(k.split("|")[1:]) for k in counts})
    fig, ax = plt.subplots(figsize=(7, 3.8))
    bottoms = [0.0] * len(buckets)
    for kind in kinds:
        totals = [sum(v for k, v in counts.items() if k.startswith(b + "|")) or 1 for b in buckets]
        shares = [100.0 * counts.get(f"{b}|{kind}", 0) / t for b, t in zip(buckets, totals)]
        ax.bar(buckets, shares, bottom=bottoms, label=kind.replace("|", ", A"))
        bottoms = [b + s for b, s in zip(bottoms, shares)]
    ax.set_title(title)
    ax.set_xlabel("group pass rate")
    ax.set_ylabel("% of nonzero-advantage rollouts")
    if kinds:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def size_histograms(series: dict[str, list[dict]], title: str):
    """Side-by-side log10 histograms of the largest tensor, total bytes and FLOPs, one outline per series
    (e.g. this run's problems and KernelBench's); each series is a list of measure records."""
    import math
    import statistics

    panels = [("largest_elements", "largest tensor (elements)"), ("total_bytes", "inputs + weights + outputs (bytes)"),
              ("flops", "FLOPs")]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (key, label) in zip(axes, panels):
        logs = {name: [math.log10(max(1, r.get(key) or 0)) for r in rows] for name, rows in series.items()}
        values = [v for vs in logs.values() for v in vs]
        if not values:
            continue
        lo, hi = math.floor(min(values)), math.ceil(max(values)) + 1
        bins = [lo + 0.5 * i for i in range(int(2 * (hi - lo)) + 1)]
        for name, vs in logs.items():
            if vs:
                ax.hist(vs, bins=bins, histtype="step", linewidth=1.6, density=True,
                        label=f"{name} (n={len(vs)}, median 1e{statistics.median(vs):.1f})")
        ax.set_xlabel(f"log10 {label}")
        ax.set_ylabel("share")
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def evaluations_side_by_side(columns: dict[str, dict[str, float]], scopes: list[str], turns: int,
                             thresholds: tuple[float, ...]):
    """`kerneldojo compare --plot`: one row per scope ("" = all problems, "level1/", ...), accuracy by turn with
    the verifier's feedback on the left and fast_p against eager (turn 1) on the right, one line per evaluation;
    a metric an evaluation lacks (fast_p of an untimed one, a level it did not judge) is left out of its line."""
    fig, axes = plt.subplots(len(scopes), 2, figsize=(11, 3.2 * len(scopes)), squeeze=False)
    for row, scope in zip(axes, scopes):
        where = scope.rstrip("/") or "all problems"
        panels = [(row[0], [(t, f"{scope}accuracy/turn_{t}") for t in range(1, turns + 1)], "turn", "accuracy",
                   f"{where}: accuracy by turn"),
                  (row[1], [(p, f"{scope}fast_{p:g}/eager/turn_1") for p in thresholds], "p (speedup over eager)",
                   "fast_p", f"{where}: fast_p against eager (turn 1)")]
        for ax, keys, xlabel, ylabel, title in panels:
            for name, metrics in columns.items():
                points = [(x, metrics[key]) for x, key in keys if metrics.get(key) is not None]
                if points:
                    xs, ys = zip(*points)
                    ax.plot(xs, ys, marker="o", label=name)
            ax.set_title(title, fontsize=10)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_ylim(-0.02, 1.02)
            ax.set_xticks([x for x, _ in keys])
            if ax.lines:
                ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
