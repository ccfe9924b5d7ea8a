"""Relabelling: LabelBoost and the relabel laws that turn private labels into a new
training set for the next phase.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import log_softmax

from ..mechanisms._closed_forms import (
    exponential_mechanism_proba,
    exponential_mechanism_sample,
    sample_categorical,
)
from ..utils._typing import VectorLike
from ._hypothesis_class import _resolve_hypothesis_class
from ._plan import LABELBOOST_EPSILON


def labelboost_law(
    hypothesis_class: Any,
    labelled: np.ndarray,
    labels: VectorLike,
    unlabelled: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of LabelBoost's choice. NOT PRIVATE: a diagnostic for tests.

    Parameters
    ----------
    hypothesis_class : ThresholdClass, FiniteHypothesisClass or a row-wise class
        The class (a class of your own in the row-wise protocol of
        :class:`~skprivpred.finite.HypothesisClass`).
    labelled, unlabelled : ndarray
        Prepared points of Shat and Dhat.
    labels : ndarray of 0/1
        Labels of Shat.

    Returns
    -------
    errors : ndarray of shape (n_dichotomies,)
        Mistakes of each distinct dichotomy on Shat.
    proba : ndarray of shape (n_dichotomies,)
        ``exp(-errors / 2) / Z`` (exponential mechanism, epsilon 1, sensitivity 1).
    """
    hypothesis_class = _resolve_hypothesis_class(hypothesis_class, "labelboost_law")
    found = hypothesis_class.candidates(labelled, np.asarray(labels, dtype=float), unlabelled)
    return found.errors, exponential_mechanism_proba(-found.errors, LABELBOOST_EPSILON)


def relabel_law(
    hypothesis_class: Any, points: np.ndarray, labels: VectorLike, epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of :func:`relabel_through_class`'s choice. NOT PRIVATE: a diagnostic for tests.

    Returns
    -------
    errors : ndarray of shape (n_candidates,)
        Mistakes of each candidate on the pool.
    proba : ndarray of shape (n_candidates,)
        ``prior * exp(-epsilon * errors / 2) / Z``.
    """
    hypothesis_class = _resolve_hypothesis_class(hypothesis_class, "relabel_law")
    found = hypothesis_class.prior_candidates(points, np.asarray(labels, dtype=float))
    return found.errors, _relabel_proba(found, epsilon)


def _relabel_proba(found: Any, epsilon: float) -> np.ndarray:
    """``prior * exp(-epsilon * errors / 2)``, normalised in log space."""
    return np.exp(log_softmax(found.log_prior - 0.5 * epsilon * found.errors))


def relabel_through_class(
    hypothesis_class: Any,
    points: np.ndarray,
    labels: VectorLike,
    epsilon: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Relabel a pool by one hypothesis of the class, drawn by the exponential mechanism.

    The relabelling step of the practical predictor: LabelBoost's idea
    (Beimel, Nissim & Stemmer 2021; Naor, Nissim, Stemmer & Yan 2023,
    Appendix C.1: one hypothesis of ``C``, chosen by the exponential mechanism
    scored on the labelled points, relabels every point) with the candidate
    set fixed in advance: the whole class weighted by a public prior
    (``prior_candidates``), rather than the pool's dichotomies, whose set
    changes with the pool's points (Lemma C.1 pays ``+3`` in epsilon for
    that). Hypothesis ``h`` is drawn with probability proportional to
    ``prior(h) exp(-epsilon * mistakes(h) / 2)`` (McSherry & Talwar 2007;
    mistakes have sensitivity 1 under substitution of one pool row), exactly,
    by inverse CDF on log-softmax-normalised weights.

    Returns
    -------
    ndarray of int
        The drawn hypothesis's labels (0/1) on the points.
    """
    found = hypothesis_class.prior_candidates(points, np.asarray(labels, dtype=float))
    choice = int(sample_categorical(_relabel_proba(found, epsilon)[None, :], rng)[0])
    return found.labels_of(choice)[0].astype(np.intp)


def label_boost(
    hypothesis_class: Any,
    labelled: np.ndarray,
    labels: VectorLike,
    unlabelled: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """LabelBoost (Beimel, Nissim & Stemmer 2021; Lemma C.1): relabel Shat and Dhat by one draw.

    One dichotomy of the class on the distinct points is drawn with probability
    proportional to ``exp(-mistakes on Shat / 2)`` (score sensitivity 1,
    epsilon 1), exactly, by inverse CDF on log-softmax-normalised scores.

    Returns
    -------
    labelled_labels, unlabelled_labels : ndarray of int8
        The drawn dichotomy's labels on Shat and on Dhat.
    """
    found = hypothesis_class.candidates(labelled, np.asarray(labels, dtype=float), unlabelled)
    choice = int(exponential_mechanism_sample(-found.errors, LABELBOOST_EPSILON, rng)[0])
    return found.labels_of(choice)
