"""
==================================================================
Your own data: a pipeline, cross-validation and a budget
==================================================================

Data without a schema (here scikit-learn's breast-cancer table, 569 rows and
30 columns in their own units) needs no public ranges when the scaler is
fitted **inside** each teacher of a
:class:`~skprivpred.SubsampleAggregateClassifier`: every teacher scales its own
part of the rows. Cross-validation then works as in scikit-learn, with one
difference: every held-out row scored is a private answer, charged to the
budget.
"""

# %%
# The model: the scaler inside the teacher
# ----------------------------------------
# ``classes`` is the public label set. The accountant holds the total budget of
# every answer this model will give, the folds' included.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier

X, y = load_breast_cancer(return_X_y=True)
teacher = make_pipeline(StandardScaler(), LogisticRegression())

budget = PrivacyAccountant(epsilon=1000.0)
model = SubsampleAggregateClassifier(
    teacher, epsilon=1.0, classes=[0, 1], accountant=budget, random_state=0
)

# %%
# Cross-validation, charged
# -------------------------
# Five folds answer every row once: 569 answers at ``epsilon = 1`` each. The
# non-private baseline is the same teacher pipeline fitted on each training
# fold (it spends nothing, and it releases everything).
folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
private = cross_val_score(model, X, y, cv=folds)
baseline = cross_val_score(teacher, X, y, cv=folds)
print(f"private answers: {private.mean():.3f} per fold {np.round(private, 3)}")
print(f"non-private:     {baseline.mean():.3f} per fold {np.round(baseline, 3)}")
print(f"budget spent: {budget.epsilon_spent:g} of {budget.epsilon:g}")

# %%
# Each fold fits 23 teachers (the count follows from ``epsilon`` and ``target_error``
# alone) on about 455 rows: about 20 rows per teacher.
fig, ax = plt.subplots(figsize=(6, 3.2))
positions = np.arange(1, 6)
ax.bar(positions - 0.18, baseline, width=0.36, label="non-private (same pipeline)")
ax.bar(positions + 0.18, private, width=0.36, label="private answers, epsilon = 1")
ax.set_ylim(0.8, 1.0)
ax.set_xlabel("fold")
ax.set_ylabel("accuracy")
ax.set_title("Breast cancer, 5-fold cross-validation")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
plt.show()

# %%
# What the budget allows next
# ---------------------------
# The folds spent 569 of the 1,000. A refit on all the rows, for deployment,
# charges nothing: only answers do. The same accountant then refuses any call
# that would go past what is left, before drawing any noise.
model.fit(X, y)
left = budget.epsilon - budget.epsilon_spent
print(f"{left:g} of the budget left: {int(left)} more answers at epsilon = 1")
