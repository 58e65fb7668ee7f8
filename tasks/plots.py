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
