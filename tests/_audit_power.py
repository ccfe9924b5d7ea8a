"""Power of the Clopper–Pearson audits in the tests: how many trials a statistical test needs.

A black-box audit test counts an outcome ``k1`` times in ``n`` runs on a data set D and
``k2`` times in ``n`` runs on a neighbour D', and refutes a claimed epsilon when the
lower confidence bound ``ln lo(k1) - ln hi(k2)`` on the log-ratio of the two
probabilities exceeds it (``lo``, ``hi``: two-sided Clopper–Pearson bounds at level
``alpha``; ``skprivpred.audit.clopper_pearson``). Whatever ``n``, the honest estimator
passes with probability at least ``1 - (number of intervals) * alpha``: the bound can
only exceed the true log-ratio when an interval misses. What ``n`` sets is the power:
the probability that a variant spending more than it claims is caught.

``detection_power`` computes that probability exactly (a double sum over the two
binomial laws, no sampling) for a variant whose probability of the outcome on D' is
``exp(-log_ratio)`` times its probability ``p`` on D; ``law_power`` does it for whole
exact laws; ``smallest_n_trials`` searches for the fewest trials that reach a target
power; ``chi_square_power`` is the power of an exact-law (goodness-of-fit) test against
a variant's law. A test shrunk with these states, in its docstring, the power against a variant
that spends twice its epsilon (``log_ratio = 2 epsilon`` on the audited outcome), and
asserts it where it is cheap, so the claim is checked, not quoted.
The power of one outcome and one orientation is a lower bound on the power of a test
that takes the largest bound over several.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from skprivpred.audit import clopper_pearson


def detection_power(n_trials, p, log_ratio, epsilon, alpha, q=None):
    """P(ln lo(k1) - ln hi(k2) > epsilon), k1 ~ Bin(n, p), k2 ~ Bin(n, q).

    ``q`` defaults to ``p * exp(-log_ratio)``. ``lo`` and ``hi`` are the two-sided
    Clopper–Pearson bounds at level ``alpha`` (the test's own, per interval).
    """
    n = int(n_trials)
    q = p * np.exp(-log_ratio) if q is None else q
    k = np.arange(n + 1)
    lower, _ = clopper_pearson(k, n, confidence_level=1 - alpha)
    _, upper = clopper_pearson(k, n, confidence_level=1 - alpha)  # non-decreasing in k
    # For each k1 the largest k2 with hi(k2) < lo(k1) exp(-epsilon): k2 <= that index.
    limit = lower * np.exp(-epsilon)
    last = np.searchsorted(upper, limit, side="left") - 1  # -1: no k2 qualifies
    caught_given_k1 = np.where(last >= 0, stats.binom.cdf(last, n, q), 0.0)
    return float(np.sum(stats.binom.pmf(k, n, p) * caught_given_k1))


def law_power(n_trials, law, law_neighbour, epsilon, alpha):
    """Power of an audit that takes the largest bound over outcomes and both orientations.

    ``law`` and ``law_neighbour`` map each outcome to its exact probability on D and
    D'. Returns the power of the best single outcome and orientation: a lower bound on
    the power of the largest bound (which is caught whenever that one outcome is).
    """
    best = 0.0
    for outcome in set(law) | set(law_neighbour):
        p, q = law.get(outcome, 0.0), law_neighbour.get(outcome, 0.0)
        for a, b in ((p, q), (q, p)):
            if a > 0:
                best = max(best, detection_power(n_trials, a, None, epsilon, alpha, q=b))
    return best


def smallest_n_trials(power_of_n, target=0.99, start=10, step=10):
    """The fewest trials (from ``start``, in steps of ``step``) with ``power_of_n(n) >= target``."""
    n = start
    while power_of_n(n) < target:
        n += step
    return n


def chi_square_power(n_draws, law, alternative, alpha):
    """P(a chi-square test of ``law`` at level ``alpha`` rejects) for draws from ``alternative``.

    Pearson's statistic under the alternative is approximately noncentral chi-square
    with ``k - 1`` degrees of freedom and noncentrality ``n sum (a - p)^2 / p`` (the
    standard large-sample approximation; the tests that use it check it against
    simulated multinomial counts in their derivation).
    """
    law, alternative = np.asarray(law, dtype=float), np.asarray(alternative, dtype=float)
    keep = law > 0
    df = int(keep.sum()) - 1
    noncentrality = n_draws * np.sum((alternative[keep] - law[keep]) ** 2 / law[keep])
    return float(stats.ncx2.sf(stats.chi2.isf(alpha, df), df, noncentrality))
