"""
==================================================================
One release with public rows: the sufficient-statistic classifier
==================================================================

:class:`~skprivpred.SufficientStatisticClassifier` spends its budget **once**,
at ``fit``, on a noisy statistic of the labelled rows; the model it
post-processes from that statistic is the release, and its answers are free.
It also uses **public unlabelled rows** (``y = -1``): they fix the basis of
features without costing anything.

Its inputs must be on a public scale, fixed without reading the private rows:
here each column's range as published in the data set's description, through
:meth:`PublicScaler.from_bounds <skprivpred.preprocessing.PublicScaler.from_bounds>`.
"""

# %%
# The data and its public scale
# -----------------------------
# scikit-learn's breast-cancer description prints the minimum and maximum of
# each of the 30 columns; they stand in for a data owner's documentation.
import re

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skprivpred import PrivacyAccountant, SufficientStatisticClassifier
from skprivpred.preprocessing import PublicScaler

data = load_breast_cancer()
ranges = re.findall(
    r"^[a-z ]+\((?:mean|standard error|worst)\):\s+([-\d.]+)\s+([-\d.]+)\s*$",
    data.DESCR,
    re.M,
)
lower = [float(low) for low, _ in ranges]
upper = [float(high) for _, high in ranges]

X_train, X_test, y_train, y_test = train_test_split(
    data.data, data.target, test_size=0.25, stratify=data.target, random_state=0
)

# %%
# A quarter of the training rows are public and unlabelled
# --------------------------------------------------------
# Which rows are public is itself public; their labels are not used (``-1``).
rng = np.random.default_rng(0)
y_fit = y_train.copy()
y_fit[rng.random(len(y_fit)) < 0.25] = -1
print(f"{np.sum(y_fit == -1)} public unlabelled rows, {np.sum(y_fit != -1)} labelled")

# %%
# One release per budget
# ----------------------
# Each fit below is a separate release, charged to its own accountant. The test
# rows are answered for free, as often as you like. Where even the best case of
# the release is mostly noise, ``fit`` says so before any answer, with a
# ``HopelessSettingWarning`` that reads no row and names what to change.
epsilons = [0.25, 0.5, 1.0, 2.0, 4.0]
scores = []
for epsilon in epsilons:
    budget = PrivacyAccountant(epsilon=epsilon, delta=1e-6)
    model = make_pipeline(
        PublicScaler.from_bounds(lower, upper),
        SufficientStatisticClassifier(
            classes=[0, 1], epsilon=epsilon, delta=1e-6, accountant=budget, random_state=0
        ),
    ).fit(X_train, y_fit)
    scores.append(model.score(X_test, y_test))  # free: post-processing of the release
    print(f"epsilon={epsilon:<5g} accuracy {scores[-1]:.3f}  spent {budget.epsilon_spent:g}")

baseline = make_pipeline(StandardScaler(), LogisticRegression()).fit(X_train, y_train)
print(f"non-private logistic regression: {baseline.score(X_test, y_test):.3f}")

# %%
fig, ax = plt.subplots(figsize=(6, 3.2))
ax.plot(epsilons, scores, "o-", label="SufficientStatisticClassifier (one release)")
ax.axhline(baseline.score(X_test, y_test), ls="--", color="grey", label="non-private LR")
ax.axhline(max(np.mean(y_test), 1 - np.mean(y_test)), ls=":", color="grey", label="majority")
ax.set_xscale("log")
ax.set_xlabel("epsilon of the one release (delta = 1e-6)")
ax.set_ylabel("test accuracy")
ax.legend(fontsize=8, loc="lower right")
fig.tight_layout()
plt.show()
