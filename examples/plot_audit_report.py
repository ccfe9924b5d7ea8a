"""
=======================================
Auditing a privacy claim from outside
=======================================

:func:`skprivpred.audit.audit_epsilon` tests an estimator's per-query privacy
claim as a black box. It fits the estimator on two neighbouring training sets
(one row replaced) with the same fit randomness, asks the same query many times
on each, and bounds from below, with Clopper–Pearson intervals, how much more
likely an answer is on one data set than on the other. If that lower bound
exceeds the claimed epsilon, the claim is refuted at the stated confidence.

The strongest test uses the worst neighbour: one whose changed row flips one
teacher's vote at the query. :func:`skprivpred.audit.flip_teacher_neighbour`
builds it. The data are synthetic; the audit spends no one's budget.
"""

# %%
# An honest estimator passes
# --------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.neighbors import KNeighborsClassifier

from skprivpred import SubsampleAggregateClassifier
from skprivpred.audit import audit_epsilon, flip_teacher_neighbour

X, y = make_classification(n_samples=300, n_features=5, random_state=0)
query = X[:1]

# 1-nearest-neighbour teachers: replacing one row of a teacher's part by the
# query itself, with the other label, is sure to flip that teacher's vote.
teacher = KNeighborsClassifier(n_neighbors=1)
clf = SubsampleAggregateClassifier(teacher, epsilon=1.0, n_teachers=10, classes=[0, 1])
# The same random_state in both calls: the two fits must share the partition.
X2, y2, info = flip_teacher_neighbour(clf, X, y, query, random_state=0)
print(
    f"row {info['row']} replaced: teacher {info['teacher']} now votes "
    f"{info['to_label']} instead of {info['from_label']}"
)

report = audit_epsilon(clf, X, y, X2, y2, query, n_trials=50_000, random_state=0)
print(report)

# %%
# A false claim is caught
# -----------------------
# The same answers claimed to be ``0.05``-private: the audit refutes the claim,
# exactly as it would flag a broken implementation that spends more than it
# says.
false_claim = audit_epsilon(
    clf, X, y, X2, y2, query, n_trials=50_000, claimed_epsilon=0.05, random_state=0
)
print(false_claim)

# %%
# Audits across epsilon
# ---------------------
# For several per-query epsilons, the audit's lower bound (95 % confidence)
# and the observed log-ratio of answer frequencies, against the claim. Points
# below the diagonal are consistent with the claim; a lower bound above it
# would be a violation. The soft-majority vote spends no more than its claim
# on one flipped vote, so the bounds stay below the diagonal. At larger epsilon
# the answer is almost always the majority label, the other label is rarely
# seen, and the bound from a fixed number of answers loosens.
epsilons = [0.25, 0.5, 1.0, 1.5, 2.0]
bounds, observed = [], []
for epsilon in epsilons:
    clf = SubsampleAggregateClassifier(teacher, epsilon=epsilon, n_teachers=10, classes=[0, 1])
    X2, y2, _ = flip_teacher_neighbour(clf, X, y, query, random_state=0)
    result = audit_epsilon(clf, X, y, X2, y2, query, n_trials=50_000, random_state=0)
    bounds.append(result.epsilon_lower_bound)
    observed.append(result.max_observed_log_ratio)
    print(
        f"epsilon {epsilon:<5g} lower bound {result.epsilon_lower_bound:.3f}  "
        f"observed {result.max_observed_log_ratio:.3f}  passed {result.passed}"
    )

fig, ax = plt.subplots(figsize=(5.5, 4))
line = np.array([0.0, max(epsilons) * 1.05])
ax.plot(line, line, color="grey", ls="--", label="claim (diagonal)")
ax.plot(epsilons, observed, "o-", label="observed log-ratio")
ax.plot(epsilons, bounds, "s-", label="lower bound (95 %)")
ax.plot([0.05], [false_claim.epsilon_lower_bound], "rx", ms=9, label="false claim 0.05 (refuted)")
ax.set_xlabel("claimed epsilon per query")
ax.set_ylabel("epsilon measured on worst neighbours")
ax.set_title("Black-box audit of SubsampleAggregateClassifier")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# A passing audit is evidence, not proof: it found no violation on these
# neighbours, at this query, with this many answers. A failing audit refutes
# the claim at the stated confidence. The report is not private: the
# neighbour construction reads the secret votes, and the frequencies estimate
# the exact answer probabilities, so run audits on synthetic or public data.
