"""
========================================
The exponential projected walk (ExpPW)
========================================

:class:`~skprivpred.ExpProjectedWalkClassifier` answers a binary question about one
numeric feature. Its answer at a query ``x`` is drawn from the *walk value*
``V(x)``: starting at 0, it steps up by one for each training point labelled 1
and down by one for each point labelled 0, in increasing order of ``x`` up to
the query, clamped to ``[-T, T]`` after every step. The answer is 1 with
probability ``expit(epsilon V(x) / 2)``.

The walk itself is secret (it is computed from the training rows): this
example draws it with the non-private helper :func:`skprivpred.finite.exppw_walk`
on synthetic data, for illustration only, next to what a user actually sees,
the frequency of private answers.
"""

# %%
# Synthetic data: a threshold at 4 with 15 % of the labels flipped
# ----------------------------------------------------------------
import matplotlib.pyplot as plt
import numpy as np

from skprivpred import ExpProjectedWalkClassifier
from skprivpred.finite import exppw_walk

rng = np.random.default_rng(3)
threshold, epsilon, T = 4.0, 1.0, 3
x = np.sort(rng.uniform(0, 10, size=60))
y = ((x >= threshold) ^ (rng.uniform(size=x.size) < 0.15)).astype(int)

clf = ExpProjectedWalkClassifier(epsilon=epsilon, clamp_bound=T, classes=[0, 1], random_state=0)
clf.fit(x.reshape(-1, 1), y)  # releases nothing
print(f"clamp bound T = {clf.clamp_bound_}")
print(clf.privacy_guarantee_)  # epsilon-DP per answered row

# %%
# The walk (non-private diagnostic) and the private answers
# ---------------------------------------------------------
# ``exppw_walk`` returns the distinct sorted training values and the walk
# value after each of them; a query takes the value of the last training point
# at or left of it (0 left of all points).
values, walk = exppw_walk(x, y, T)
grid = np.linspace(-0.5, 10.5, 221)
position = np.searchsorted(values, grid, side="right") - 1
walk_at_grid = np.where(position >= 0, walk[np.maximum(position, 0)], 0)

# Each query point is asked 200 times; every answer is a fresh private release.
n_repeats = 200
answers = clf.predict(np.repeat(grid, n_repeats).reshape(-1, 1))
frequency = answers.reshape(grid.size, n_repeats).mean(axis=1)

fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5), sharex=True, height_ratios=[3, 2])
top.step(grid, walk_at_grid, where="post", label="walk value V(x)")
top.axhspan(-T, T, alpha=0.07, label=f"clamp [-T, T], T = {T}")
for label, height, color in ((1, T + 0.6, "tab:green"), (0, -T - 0.6, "tab:red")):
    points = x[y == label]
    top.scatter(
        points,
        np.full(points.size, height),
        marker="|",
        color=color,
        s=80,
        label=f"training label {label}",
    )
top.set_ylim(-T - 1.2, T + 1.2)
top.set_ylabel("V(x)")
top.legend(loc="center right", fontsize=7, ncol=2, frameon=False)
top.set_title("ExpPW on 60 noisy points (true threshold at 4, 15 % flipped)")

p_one = 1.0 / (1.0 + np.exp(-epsilon * walk_at_grid / 2))
bottom.step(grid, p_one, where="post", color="tab:purple", label="P(answer 1) = expit(eps V / 2)")
bottom.plot(
    grid, frequency, ".", ms=3, color="black", label=f"private answers (mean of {n_repeats})"
)
bottom.axhline(0.5, color="grey", lw=0.6)
bottom.set_ylim(0, 1)
bottom.set_xlabel("x (query)")
bottom.set_ylabel("P(1)")
bottom.legend(loc="lower right", fontsize=7, frameon=False)
for ax in (top, bottom):
    ax.axvline(threshold, color="grey", ls="--", lw=0.8)
fig.tight_layout()
plt.show()

# %%
# Every flipped label moves the walk by one step only, and the clamp lets the
# walk recover within ``T`` points. The answers follow the closed-form
# probability: a saturated walk answers wrongly with probability
# ``expit(-epsilon T / 2)``, about 18 % here; a larger ``T`` (a smaller
# ``target_error``) makes saturated answers surer and needs more training points.
