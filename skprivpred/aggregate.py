"""Subsample-and-aggregate with a soft majority vote (Dwork & Feldman, Thm 4.1)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.utils.multiclass import check_classification_targets

from ._base import (
    check_accountant,
    check_epsilon,
    check_open_unit_interval,
    check_positive_int,
    reject_fit_params,
    resolve_classes,
)
from ._subsample import SubsampleMixin
from ._teachers import TeacherEnsemble
from .mechanisms import exponential_mechanism_proba, pac_n_partitions, sample_categorical

__all__ = ["SubsampleAggregateClassifier"]


class SubsampleAggregateClassifier(SubsampleMixin, ClassifierMixin, BaseEstimator):
    """Private prediction by subsample-and-aggregate with a soft majority vote.

    The training set is cut into ``n_teachers`` disjoint random parts; one clone of
    ``estimator`` (a *teacher*) is fitted on each part. A query row ``x`` is
    answered by drawing label ``k`` with probability proportional to
    ``exp(epsilon * c_k(x) / 2)``, where ``c_k(x)`` is the number of teachers
    voting ``k`` (the exponential mechanism with the vote count as score). For
    two labels this is ``P(1) = expit(epsilon (c_1 - c_0) / 2)``.

    **Privacy guarantee.** Neighbouring training sets have the same size and
    differ in one row (*replace-one*). Each row passed to ``predict`` (or to
    ``score``, which calls ``predict``) is one query and is answered with fresh
    noise; every answer is ``(epsilon, 0)``-differentially private with respect
    to the training set (Dwork & Feldman 2018, Theorem 4.1): one changed row
    changes one teacher, hence moves one vote, hence changes every output
    probability by a factor at most ``exp(epsilon)``. ``m`` rows cost
    ``m * epsilon`` under basic composition; attach a
    :class:`~skprivpred.PrivacyAccountant` to enforce a total budget.
    ``fit`` releases nothing. **Corrected constant:** the paper's prose weights
    each vote by ``exp(epsilon * count)``, which is only ``2 epsilon``-private;
    the theorem's proof, and this estimator, use ``exp(epsilon * count / 2)``.

    The teachers, the partition, the vote counts and the exact output
    probabilities are secret: no public attribute or method reveals them, and
    ``predict_proba`` is not offered because the exact probability discloses the
    vote count. A pickled fitted estimator contains the teachers: protect it like
    the training data.

    Parameters
    ----------
    estimator : classifier, default=None
        The base learner, cloned once per part. ``None`` means
        ``LogisticRegression()``. Preprocessing that is fitted to data (scaling,
        encoding) must live *inside* it (for example a
        :class:`~sklearn.pipeline.Pipeline`), so that each teacher sees only its
        own part; preprocessing fitted on the whole training set would couple
        every teacher to every row and void the guarantee.
    epsilon : float, default=1.0
        Privacy parameter of each answered query row, > 0.
    n_teachers : int, default=None
        Number of disjoint parts ``r`` (public; between 1 and the number of
        training rows). ``None`` derives it from ``alpha`` and ``epsilon`` by
        Theorem 4.1: ``r = ceil(6 ln(4 (K - 1) / alpha) / epsilon)`` for ``K``
        classes (23 for ``alpha=0.1, epsilon=1`` and two classes).
    alpha : float, default=0.1
        Target error in (0, 1); only used to derive ``n_teachers``.
    classes : array-like, default=None
        The public label set. ``None`` reads it from ``y`` and emits a
        :class:`~skprivpred.PrivacyWarning` (the labels present are information
        about the data).
    accountant : PrivacyAccountant, default=None
        Charged ``epsilon`` per query row before any noise is drawn; a call that
        would exceed its budget raises
        :class:`~skprivpred.BudgetExhaustedError` and changes nothing. It is
        shared, not copied, by ``clone`` and ``copy.deepcopy``.
    n_jobs : int, default=None
        Number of joblib jobs for fitting the teachers (any joblib backend, set
        with ``joblib.parallel_config``).
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds two independent streams: the fit stream (partition, teacher seeds)
        and the query stream (the answers' noise), which every query advances.
        ``None`` uses OS entropy and is the right choice in deployment: anyone
        who knows an integer seed can regenerate the noise, which voids the
        guarantee. Integer seeds are for tests and reproducible experiments.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The public label set.
    n_teachers_ : int
        The number of teachers used.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (only for inputs with string
        column names).
    privacy_guarantee_ : dict
        ``epsilon``, ``delta``, ``neighbouring``, ``unit`` and ``theorem`` of
        each answer.
    queries_answered_ : int
        Number of query rows answered since ``fit``.

    See Also
    --------
    skprivpred.audit.audit_epsilon : Black-box audit of the per-query epsilon.

    Notes
    -----
    Model selection with :class:`~sklearn.model_selection.GridSearchCV` or
    ``cross_val_score`` on the private data is *not* private: every score spends
    ``epsilon`` per evaluated row again, and the selected hyper-parameters are a
    data-dependent release. Choose ``n_teachers`` from ``alpha`` (theory) or tune
    on public or surrogate data.

    References
    ----------
    C. Dwork and V. Feldman. Privacy-preserving Prediction. COLT 2018,
    Theorem 4.1.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skprivpred import SubsampleAggregateClassifier
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> clf = SubsampleAggregateClassifier(epsilon=1.0, classes=[0, 1], random_state=0)
    >>> clf.fit(X, y).n_teachers_
    23
    >>> clf.predict(X[:5]).shape
    (5,)
    """

    _default_estimator = LogisticRegression

    def __init__(
        self,
        estimator=None,
        *,
        epsilon: float = 1.0,
        n_teachers: int | None = None,
        alpha: float = 0.1,
        classes=None,
        accountant=None,
        n_jobs: int | None = None,
        random_state=None,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.n_teachers = n_teachers
        self.alpha = alpha
        self.classes = classes
        self.accountant = accountant
        self.n_jobs = n_jobs
        self.random_state = random_state

    def fit(self, X, y, **fit_params):
        """Fit one teacher per disjoint random part of the training set.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Training rows, passed to the teachers unchanged. Must not contain
            NaN or infinity.
        y : array-like of shape (n_samples,)
            Labels, of any type, all in ``classes``.
        **fit_params : dict
            Not supported; ``sample_weight`` in particular is refused because a
            weighted row can move an answer by more than one row.

        Returns
        -------
        self : SubsampleAggregateClassifier
            The fitted estimator.
        """
        reject_fit_params(self, fit_params)
        epsilon = check_epsilon(self.epsilon)
        alpha = check_open_unit_interval(self.alpha, "alpha")
        n_teachers = check_positive_int(self.n_teachers, "n_teachers", allow_none=True)
        check_accountant(self.accountant)
        estimator = self._base_estimator()
        with self._unchanged_on_error():
            X, y = self._validate_training_data(X, y, y_numeric=False)
            check_classification_targets(y)
            classes = resolve_classes(self.classes, y, type(self).__name__)
            if n_teachers is None:
                n_teachers = pac_n_partitions(alpha, epsilon, n_classes=len(classes))
            teachers = self._fit_teachers(estimator, X, y, np.searchsorted(classes, y), n_teachers)
            self._ensemble = TeacherEnsemble(teachers, classes)
            self.classes_ = classes
            self.privacy_guarantee_ = {
                "epsilon": epsilon,
                "delta": 0.0,
                "neighbouring": "replace-one",
                "unit": "per query row",
                "theorem": "Dwork & Feldman 2018, Theorem 4.1 (weight epsilon/2 per vote)",
            }
        return self

    # -- queries ------------------------------------------------------------------
    def _answer_law(self, counts: np.ndarray) -> np.ndarray:
        """Exact output law for given vote counts (exponential mechanism, weight eps/2)."""
        return exponential_mechanism_proba(counts, self.privacy_guarantee_["epsilon"])

    def predict(self, X) -> np.ndarray:
        """Answer each row with a label drawn from the soft-majority law.

        Each row is one query, ``epsilon``-DP with fresh noise; the attached
        accountant is charged for all rows before any noise is drawn.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_queries, n_features)
            Query rows (no NaN or infinity).

        Returns
        -------
        ndarray of shape (n_queries,)
            One private label per row, from ``classes_``.
        """
        X = self._validate_queries(X)
        law = self._answer_law(self._ensemble.vote_counts(X))
        index = self._release(
            law.shape[0], self.privacy_guarantee_["epsilon"], lambda rng: sample_categorical(law, rng)
        )
        return self.classes_[index]

    # -- non-private diagnostics (tests and audits only) ------------------------------
    def _vote_counts(self, X) -> np.ndarray:
        """Teacher votes per class. NOT PRIVATE: leaks the training data; never charges."""
        return self._ensemble.vote_counts(self._validate_queries(X))

    def _output_distribution(self, X) -> np.ndarray:
        """Exact answer law per row. NOT PRIVATE: leaks the vote counts; never charges."""
        return self._answer_law(self._vote_counts(X))
