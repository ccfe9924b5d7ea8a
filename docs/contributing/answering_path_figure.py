"""Draw the answering path's one picture (``docs/_static/answering_path.png``).

Run from the repository root: ``python docs/contributing/answering_path_figure.py``.
The figure is checked in; run this again when the path changes.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "_static" / "answering_path.png"

#: (label, who supplies it, colour): the stages, left to right.
STAGES = [
    ("dask\nedge", "path", "#dddddd"),
    ("public\nchecks", "plan.check", "#cfe2f3"),
    ("dry run", "plan.dry_run", "#cfe2f3"),
    ("charge", "accountant", "#f4cccc"),
    ("computation", "plan.values", "#d9ead3"),
    ("mechanism", "plan.draw", "#fff2cc"),
    ("post-\nprocessing", "plan.finish", "#d9ead3"),
]


def main() -> None:
    fig, ax = plt.subplots(figsize=(11, 3.4))
    ax.set_xlim(0, 11)
    ax.set_ylim(0, 3.4)
    ax.axis("off")
    width, gap, y = 1.3, 0.25, 1.6
    x = 0.2
    centres = []
    for label, who, colour in STAGES:
        ax.add_patch(
            FancyBboxPatch((x, y), width, 1.0, boxstyle="round,pad=0.05", fc=colour, ec="#444444")
        )
        ax.text(x + width / 2, y + 0.5, label, ha="center", va="center", fontsize=10)
        ax.text(x + width / 2, y - 0.2, who, ha="center", va="top", fontsize=8, family="monospace")
        centres.append(x + width / 2)
        x += width + gap
    for k in range(len(STAGES) - 1):
        start = centres[k] + width / 2
        ax.add_patch(
            FancyArrowPatch(
                (start, y + 0.5), (start + gap, y + 0.5), arrowstyle="-|>", mutation_scale=12
            )
        )
    # The lock: charge, computation and mechanism run under the estimator's lock.
    left = centres[3] - width / 2 - 0.08
    right = centres[5] + width / 2 + 0.08
    ax.add_patch(
        FancyBboxPatch(
            (left, y - 0.55),
            right - left,
            1.75,
            boxstyle="round,pad=0.02",
            fc="none",
            ec="#990000",
            ls="--",
        )
    )
    ax.text(
        (left + right) / 2,
        y + 1.3,
        "under the estimator's lock",
        ha="center",
        fontsize=9,
        color="#990000",
    )
    # Refusals: everything left of the charge refuses on public facts and changes nothing.
    ax.annotate(
        "refusals here change nothing\n(public facts only)",
        xy=(centres[2], y),
        xytext=(centres[1] + 0.3, 0.25),
        ha="center",
        fontsize=9,
        arrowprops={"arrowstyle": "->", "color": "#555555"},
    )
    ax.annotate(
        "dask: mapped over the blocks\nwhere they live",
        xy=(centres[4], y),
        xytext=(centres[4], 0.25),
        ha="center",
        fontsize=9,
        arrowprops={"arrowstyle": "->", "color": "#555555"},
    )
    ax.annotate(
        "free plans skip the charge\nand the mechanism",
        xy=(centres[6], y),
        xytext=(centres[6] - 0.2, 0.25),
        ha="center",
        fontsize=9,
        arrowprops={"arrowstyle": "->", "color": "#555555"},
    )
    ax.text(0.2, 3.2, "answer(estimator, X, plan)", fontsize=11, family="monospace", va="top")
    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, dpi=110)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
