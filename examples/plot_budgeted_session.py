"""
============================================
A budgeted query session with an accountant
============================================

A :class:`~skprivpred.PrivacyAccountant` holds a total privacy budget. Every
query call of an estimator it is attached to is charged for all its rows
*before* any noise is drawn; a call that would overspend raises
:class:`~skprivpred.BudgetExhaustedError` and changes nothing (no answer, no
charge, no noise drawn), so smaller calls can still use what is left.

This example serves batches of queries from a
:class:`~skprivpred.SubsampleAggregateClassifier` until the budget runs out,
and plots the spending. The data are synthetic.
"""

# %%
# A budget of 40 for answers that cost 0.5 each
# ----------------------------------------------
# Under basic composition ``m`` answers at ``epsilon = 0.5`` cost ``0.5 m``,
# so the budget pays for 80 answers in all.
import matplotlib.pyplot as plt
from sklearn.datasets import make_classification

from skprivpred import BudgetExhaustedError, PrivacyAccountant, SubsampleAggregateClassifier

X, y = make_classification(n_samples=6000, n_features=10, random_state=0)
X_train, y_train, X_queries = X[:5000], y[:5000], X[5000:]

budget = PrivacyAccountant(epsilon=40.0)
clf = SubsampleAggregateClassifier(epsilon=0.5, classes=[0, 1], accountant=budget, random_state=0)
clf.fit(X_train, y_train)  # fitting releases nothing and costs nothing
print(
    f"{clf.n_teachers_} teachers; budget left for {budget.remaining_queries(epsilon=0.5)} answers"
)

# %%
# Serving batches until the budget is exhausted
# ----------------------------------------------
# Batches of 15 rows arrive. The sixth batch would need 7.5 while only 2.5 is
# left: it is refused as a whole. A batch of 5 rows still fits.
spent = [0.0]
answered = [0]
start = 0
for batch in range(8):
    rows = X_queries[start : start + 15]
    try:
        answers = clf.predict(rows)
    except BudgetExhaustedError as exc:
        print(f"batch {batch}: refused ({exc})")
        break
    start += len(rows)
    spent.append(budget.epsilon_spent)
    answered.append(budget.queries_answered)
    print(f"batch {batch}: {len(answers)} answers, epsilon spent {budget.epsilon_spent:g}")

left = budget.remaining_queries(epsilon=0.5)
print(f"after the refusal: spent {budget.epsilon_spent:g}, room for {left} more answers")
answers = clf.predict(X_queries[start : start + left])
spent.append(budget.epsilon_spent)
answered.append(budget.queries_answered)
print(f"a smaller batch of {left} rows is answered; spent {budget.epsilon_spent:g} of 40")

# %%
# The refused call drew no noise and charged nothing: the spending curve
# reaches the budget exactly, and every answered row cost 0.5.
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(answered, spent, marker="o", label="epsilon spent after each call")
ax.annotate(
    "a call for 15 rows is refused here:\nnothing charged, nothing drawn",
    xy=(75, 37.5),
    xytext=(20, 33),
    fontsize=8,
    arrowprops={"arrowstyle": "->"},
)
ax.axhline(budget.epsilon, color="tab:red", ls="--", label="budget")
ax.set_xlabel("query rows answered")
ax.set_ylabel("total epsilon (basic composition)")
ax.set_title("A query session under a budget of 40")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()

# %%
# Sharing one budget
# ------------------
# One accountant can be attached to several estimators: they then draw on one
# total. ``sklearn.clone`` and ``copy.deepcopy`` share the accountant instead of
# copying it, so a copy never doubles the budget.
from sklearn.base import clone

twin = clone(clf)
print(twin.accountant is budget)
