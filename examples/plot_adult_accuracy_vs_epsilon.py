"""
==========================================
Accuracy against epsilon on UCI Adult
==========================================

How accurate are private answers? This example fits
:class:`~skprivpred.SubsampleAggregateClassifier` on UCI Adult (predict
whether income exceeds 50K) for several per-query privacy levels ``epsilon``
and compares the accuracy of its private answers on held-out rows with a
non-private logistic regression on the same rows.

Each answered row is one ``epsilon``-private release. The number of teachers
follows the theory's default (Theorem 4.1 of Dwork & Feldman with
``target_error = 0.1``): smaller epsilon, more teachers, fewer rows per teacher.

To keep the documentation build fast, the example uses 10,000 training rows
and 2,000 test rows; ``benchmarks/run.py`` runs the full study.
"""

# %%
# The data
# --------
# :func:`skprivpred.datasets.load_adult` downloads the raw files once into a
# local cache (``~/skprivpred_data``, or the folder in ``SKPRIVPRED_DATA``)
# and verifies their checksums on every load. Without the cache and without a
# network connection the data cannot be loaded; the example then runs the same
# study on a synthetic stand-in and says so in its output and in the plot
# title, rather than fail the documentation build.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from skprivpred import SubsampleAggregateClassifier
from skprivpred.datasets import adult_schema, load_adult
from skprivpred.preprocessing import public_preprocessor

# %%
# Public preprocessing, outside the private estimator
# ---------------------------------------------------
# Preprocessing fitted on the whole training set (a ``StandardScaler``, a
# ``OneHotEncoder`` that learns its categories) would couple every teacher to
# every row and void the guarantee. ``public_preprocessor(adult_schema())``
# reads nothing from the rows: the category lists come from the data set's
# documentation and the numeric transforms from the columns' units. It is safe
# *outside* the private estimator, where it runs once for all teachers, and the
# teachers inside stay plain linear models (one stacked matrix product).
preprocess = public_preprocessor(adult_schema())


rng = np.random.default_rng(0)
try:
    X_train, y_train = load_adult(subset="train", as_frame=True, return_X_y=True)
    X_test, y_test = load_adult(subset="test", as_frame=True, return_X_y=True)
    train = rng.choice(len(X_train), size=10_000, replace=False)
    test = rng.choice(len(X_test), size=2_000, replace=False)
    X_train, y_train = preprocess.fit_transform(X_train.iloc[train]), y_train.to_numpy()[train]
    X_test, y_test = preprocess.transform(X_test.iloc[test]), y_test.to_numpy()[test]
    data_name = "UCI Adult"
except OSError as exc:
    reason = str(exc).splitlines()[0]
    print(
        f"UCI Adult is not available ({type(exc).__name__}: {reason}); "
        "using a synthetic stand-in instead."
    )
    X, y = make_classification(
        n_samples=12_000, n_features=7, n_informative=4, weights=[0.76], random_state=0
    )
    X_train, y_train, X_test, y_test = X[:10_000], y[:10_000], X[10_000:], y[10_000:]
    data_name = "a synthetic stand-in (Adult unavailable)"
print(f"{data_name}: {len(X_train)} training rows, {len(X_test)} test rows")

baseline = LogisticRegression().fit(X_train, y_train)
baseline_accuracy = baseline.score(X_test, y_test)
majority_accuracy = max(np.mean(y_test), 1 - np.mean(y_test))
print(f"non-private logistic regression: {baseline_accuracy:.3f}")

# %%
# Private answers at several epsilons
# -----------------------------------
# ``score`` answers every test row privately (one release per row) and
# compares the answers with the true labels.
epsilons = [0.1, 0.25, 0.5, 1.0, 2.0]
accuracies, teachers = [], []
for epsilon in epsilons:
    clf = SubsampleAggregateClassifier(
        LogisticRegression(), epsilon=epsilon, classes=[0, 1], random_state=0
    )
    clf.fit(X_train, y_train)
    accuracies.append(clf.score(X_test, y_test))
    teachers.append(clf.n_teachers_)
    print(f"epsilon {epsilon:<5g} {clf.n_teachers_:>4d} teachers  accuracy {accuracies[-1]:.3f}")

# %%
# The plot
# --------
# The bars are 95 % binomial intervals for the accuracy on the 2,000 test
# answers.
errors = 1.96 * np.sqrt(np.multiply(accuracies, 1 - np.array(accuracies)) / len(y_test))
fig, ax = plt.subplots(figsize=(6.5, 4))
ax.errorbar(
    epsilons,
    accuracies,
    yerr=errors,
    marker="o",
    capsize=3,
    label="SubsampleAggregateClassifier (private answers)",
)
for epsilon, accuracy, r in zip(epsilons, accuracies, teachers):
    ax.annotate(
        f"{r} teachers",
        (epsilon, accuracy),
        textcoords="offset points",
        xytext=(4, -12),
        fontsize=7,
    )
ax.axhline(baseline_accuracy, color="tab:green", ls="--", label="non-private logistic regression")
ax.axhline(majority_accuracy, color="grey", ls=":", label="majority label")
ax.set_xscale("log")
ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
ax.set_xlabel("epsilon per answered query")
ax.set_ylabel("test accuracy")
ax.set_title(f"Private prediction on {data_name}")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
plt.show()

# %%
# At ``epsilon = 1`` each answer is private on its own and the accuracy is
# close to the non-private model. The price of privacy grows as epsilon
# shrinks: more, smaller teachers, and a noisier vote. Every answer costs
# ``epsilon`` of the total budget: 2,000 answers at ``epsilon = 1`` are
# 2,000-DP under basic composition; see the many-query mode of
# :class:`~skprivpred.SubsampleAggregateClassifier` to answer many queries
# under one total budget.
