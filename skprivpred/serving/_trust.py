"""What a model file may hold: the types it may construct, and the checks after loading.

A model file is read with :mod:`skops.io`, which constructs only the types it is
told to trust (it never unpickles). The types trusted by default are

* those that skops trusts by default: scikit-learn's estimators and the
  builtin, NumPy and SciPy types they hold;
* scikit-learn's decision-tree storage (``sklearn.tree._tree.Tree``), which
  skops leaves out because a crafted node array can make ``predict`` read out
  of bounds: every tree is checked here, after loading and before any answer
  (:func:`check_trees`); likewise the arrays of libsvm's models (``SVC``,
  ``NuSVC``, ``SVR``, ``NuSVR``, ``OneClassSVM``), which libsvm reads through
  raw pointers (:func:`check_svms`);
* skprivpred's estimators, except the everlasting predictors (their phase state
  lives in the process, see :func:`process_local`), and the listed state
  objects they hold (:data:`SKPRIVPRED_STATE_TYPES`). A ``PrivacyAccountant``
  read from a file reconnects to the ledger address the file names, and opens
  nothing before the first charge: whoever can write the model file chooses
  the budget its service charges (and its noise), which is why
  :func:`skprivpred.serving.load_model` refuses a file that another user can
  write.

Anything else (a user's teacher class, a function used as an expert,
HistGradientBoosting's tree predictors) is refused with its name, unless the
operator trusts it explicitly (``load_model(path, trusted=[...])``,
``--trust module.Type``).
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterator
from typing import Any, NoReturn

import numpy as np

__all__ = [
    "SKPRIVPRED_STATE_TYPES",
    "TREE_TYPE",
    "check_svms",
    "check_trees",
    "default_trusted_types",
    "process_local",
]

#: scikit-learn's decision-tree storage: trusted once :func:`check_trees` has run.
TREE_TYPE = "sklearn.tree._tree.Tree"

#: The objects that fitted skprivpred estimators hold besides scikit-learn and NumPy
#: types. Each is plain data (no ``__setstate__`` beyond the two noted), safe to
#: construct from a file.
SKPRIVPRED_STATE_TYPES = (
    # Reconnects to its ledger by address (lazily: no connection while loading).
    "skprivpred.accounting._accountant.PrivacyAccountant",
    "skprivpred.accounting._guarantee.PrivacyGuarantee",
    # Restores only its answered-row count; its noise generator is always new.
    "skprivpred._base.QueryStream",
    "skprivpred._teachers._votes.TeacherEnsemble",
    "skprivpred._teachers._votes._LinearStack",
    "skprivpred._teachers._fit.ConstantTeacher",
    # The newest journal row an accountant has seen (to refuse a rolled-back ledger).
    "skprivpred.accounting._ledger.Mark",
    # Stacked tree teachers: node arrays copied from the (checked) fitted trees.
    "skprivpred._teachers._trees.StackedTrees",
    "skprivpred._teachers._trees.StackedPredictions",
    "skprivpred._teachers._trees._Nodes",
    "skprivpred._teachers._trees._Group",
    "skprivpred._teachers._folding.FoldedLinear",
    "skprivpred._teachers._folding._Affine",
    "skprivpred.linear_model._linear._ScoreRelease",
    # A setting's best-case figure: a float and three strings, from public quantities.
    "skprivpred._hopeless.BestCase",
    "skprivpred.preprocessing.PublicOneHotEncoder",
    "skprivpred.preprocessing.PublicScaler",
    "skprivpred.finite._hypotheses.ConjunctionClass",
    "skprivpred.finite._hypotheses._Conjunction",
    "skprivpred.finite._hypotheses.GridThresholdClass",
    "skprivpred.finite._hypotheses._Threshold",
    "skprivpred.finite._hypotheses.HypothesisList",
    "skprivpred.finite._hypotheses._Listed",
)


def _type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _process_local_types() -> tuple[type, ...]:
    from ..everlasting._genericbbl import GenericBBLClassifier
    from ..everlasting._practical import PrivateEverlastingClassifier

    return (GenericBBLClassifier, PrivateEverlastingClassifier)


def default_trusted_types() -> list[str]:
    """The types a model file may hold without the operator trusting them explicitly.

    Returns
    -------
    list of str
        Fully qualified type names, in addition to skops's own defaults.
    """
    from sklearn.base import BaseEstimator

    import skprivpred

    local = _process_local_types()
    estimators = {
        _type_name(obj)
        for obj in (getattr(skprivpred, name) for name in skprivpred.__all__)
        if inspect.isclass(obj) and issubclass(obj, BaseEstimator) and not issubclass(obj, local)
    }
    return sorted({TREE_TYPE, *SKPRIVPRED_STATE_TYPES, *estimators, *_version_specific_types()})


def _version_specific_types() -> list[str]:
    """Plain-data types that only some scikit-learn versions hold in a fitted estimator.

    scikit-learn 1.5 to 1.7 keep a ``ColumnTransformer``'s remainder columns in a
    ``_RemainderColsList`` (a ``list`` subclass with a deprecation flag), which skops
    does not trust by default; it is trusted where it exists.
    """
    from sklearn.compose import _column_transformer

    names = []
    if hasattr(_column_transformer, "_RemainderColsList"):
        names.append(_type_name(_column_transformer._RemainderColsList))
    return names


def _objects(root: Any) -> Iterator[Any]:
    """Every object reachable from ``root`` through attributes, containers and object arrays.

    Modules are not entered: a ledger's database driver holds one, and through it every
    object of the interpreter would be reachable, not only the model's parts.
    """
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if (
            id(obj) in seen
            or obj is None
            or isinstance(obj, str | bytes | int | float | bool | types.ModuleType)
        ):
            continue
        seen.add(id(obj))
        yield obj
        if isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
        elif isinstance(obj, np.ndarray):
            if obj.dtype == object:
                stack.extend(obj.ravel().tolist())
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            stack.extend(vars(obj).values())


def process_local(model: Any) -> Any:
    """The first part of ``model`` whose privacy state lives in the process, or None.

    The everlasting predictors count the answers of each phase in the Python
    object: two processes that loaded the same file would each run their own
    phases, answering more queries per phase than the guarantee allows.
    """
    local = _process_local_types()
    for obj in _objects(model):
        if isinstance(obj, local):
            return obj
    return None


class _TreeRefused(ValueError):
    pass


def _check_tree_storage(tree: Any, n_features: int) -> None:
    """A tree's nodes form a tree over ``n_features`` features (else :class:`_TreeRefused`)."""
    n_nodes, capacity = int(tree.node_count), int(tree.capacity)
    # node_count beyond the allocated nodes would make every node array read past the end.
    if not 0 < n_nodes <= capacity:
        raise _TreeRefused("a decision tree's node count exceeds its node storage")
    if int(tree.n_features) != n_features:
        raise _TreeRefused("a decision tree's feature count differs from its estimator's")
    left = np.asarray(tree.children_left, dtype=np.int64)
    right = np.asarray(tree.children_right, dtype=np.int64)
    feature = np.asarray(tree.feature, dtype=np.int64)
    index = np.arange(n_nodes)
    leaf = left == -1
    if np.any(leaf != (right == -1)):
        raise _TreeRefused("a decision tree has a node with one child")
    inner = ~leaf
    # scikit-learn adds a node's children after it: children point forward, within the tree.
    for child in (left[inner], right[inner]):
        if np.any(child <= index[inner]) or np.any(child >= n_nodes):
            raise _TreeRefused("a decision tree has a child index outside the tree")
    if np.any(feature[inner] < 0) or np.any(feature[inner] >= n_features):
        raise _TreeRefused("a decision tree splits on a feature index outside the input")
    children = np.concatenate([left[inner], right[inner]])
    if children.size != n_nodes - 1 or np.unique(children).size != n_nodes - 1:
        raise _TreeRefused("a decision tree has a node reached twice or never")
    # decision_path sizes its buffer by max_depth: every node must lie within it.
    depth = np.zeros(n_nodes, dtype=np.int64)
    for i in np.flatnonzero(inner).tolist():  # parents come before their children
        depth[left[i]] = depth[right[i]] = depth[i] + 1
    if int(depth.max()) > int(tree.max_depth):
        raise _TreeRefused("a decision tree is deeper than its recorded depth")


def _flat(members: Any) -> list:
    """The estimators of a (possibly nested) list or object array of estimators."""
    if isinstance(members, np.ndarray):
        members = members.ravel().tolist()
    if isinstance(members, list | tuple):
        return [m for item in members for m in _flat(item)]
    return [members]


def check_trees(model: Any) -> None:
    """Check every scikit-learn decision tree in a loaded model before it answers.

    A tree's node array holds raw child and feature indices that scikit-learn
    follows without bounds checks; a crafted file could make ``predict`` read
    outside the tree or the query. Every tree must be the ``tree_`` of a
    decision-tree estimator, its children must point forward within it, its
    split features must lie within the estimator's input width, and in an
    ensemble that calls its trees without validating their input (forests,
    gradient boosting, bagging) each tree's input width must be the width the
    ensemble gives it.

    Raises
    ------
    ValueError
        Saying which check failed.
    """
    from sklearn.ensemble import BaseEnsemble
    from sklearn.tree import BaseDecisionTree

    objects = list(_objects(model))
    owners: dict[int, Any] = {}
    for obj in objects:
        if isinstance(obj, BaseDecisionTree) and hasattr(obj, "tree_"):
            owners[id(obj.tree_)] = obj
            _check_tree_storage(obj.tree_, int(obj.n_features_in_))
    for obj in objects:
        if _type_name(type(obj)) == TREE_TYPE and id(obj) not in owners:
            raise _TreeRefused("a decision tree outside a decision-tree estimator")
        if isinstance(obj, BaseEnsemble) and hasattr(obj, "estimators_"):
            members = _flat(obj.estimators_)
            subsets = getattr(obj, "estimators_features_", None)
            for i, member in enumerate(members):
                if not isinstance(member, BaseDecisionTree):
                    continue
                width = int(obj.n_features_in_)
                if subsets is not None:
                    features = np.asarray(subsets[i])
                    if features.size and (features.min() < 0 or features.max() >= width):
                        raise _TreeRefused("an ensemble member reads a feature outside the input")
                    width = int(features.size)
                if int(member.n_features_in_) != width:
                    raise _TreeRefused("an ensemble's tree expects another input width")


class _SVMRefused(ValueError):
    pass


_LIBSVM_KERNELS = ("linear", "poly", "rbf", "sigmoid", "precomputed")


def _array(model: Any, name: str, dtype: type, ndim: int) -> np.ndarray:
    """``model.<name>``: a C-ordered ``dtype`` array of ``ndim`` dimensions (else refused)."""
    value = getattr(model, name, None)
    if not (
        isinstance(value, np.ndarray)
        and value.dtype == dtype
        and value.ndim == ndim
        and value.flags.c_contiguous
    ):
        raise _SVMRefused(
            f"a {type(model).__name__}'s {name} is not a C-ordered {ndim}-D "
            f"{np.dtype(dtype).name} array"
        )
    return value


def _check_svm_arrays(model: Any) -> None:
    """A libsvm model's fitted arrays have the shapes and dtypes its predictions assume."""
    import scipy.sparse as sp
    from sklearn.base import ClassifierMixin

    kind = type(model).__name__

    def refuse(what: str) -> NoReturn:
        raise _SVMRefused(f"a {kind}'s {what}")

    kernel = getattr(model, "kernel", None)
    if not isinstance(kernel, str) or kernel not in _LIBSVM_KERNELS:
        refuse("kernel is not one of libsvm's")
    shape_fit = getattr(model, "shape_fit_", None)
    if not (
        isinstance(shape_fit, tuple)
        and len(shape_fit) == 2
        and all(isinstance(n, int | np.integer) and n > 0 for n in shape_fit)
    ):
        refuse("shape_fit_ is not the shape of a training set")
    n_samples, n_features = int(shape_fit[0]), int(shape_fit[1])
    if int(getattr(model, "n_features_in_", -1)) != n_features:
        refuse("input width differs from its training set's")
    support = _array(model, "support_", np.int32, 1)
    n_support = _array(model, "_n_support", np.int32, 1)
    intercept = _array(model, "_intercept_", np.float64, 1)
    prob_a = _array(model, "_probA", np.float64, 1)
    prob_b = _array(model, "_probB", np.float64, 1)
    n_sv, n_class = support.shape[0], n_support.shape[0]
    n_pairs = n_class * (n_class - 1) // 2
    if isinstance(model, ClassifierMixin):
        if n_class != len(getattr(model, "classes_", ())) or n_class < 2:
            refuse("support counts do not match its classes")
        if np.any(n_support < 0) or int(n_support.sum()) != n_sv:
            refuse("support counts do not add up to its support vectors")
    elif n_class != 2 or np.any(n_support < 0):
        refuse("support counts are not those of a regression or one-class model")
    if np.any(support < 0) or np.any(support >= n_samples):
        refuse("support indices lie outside its training set")
    public_intercept: Any = getattr(model, "intercept_", None)
    if intercept.shape != (n_pairs,) or np.shape(public_intercept) != (n_pairs,):
        refuse("intercepts do not match its classes")
    if prob_a.shape != prob_b.shape or prob_a.shape[0] not in (0, n_pairs):
        refuse("probability calibration does not match its classes")
    probability = getattr(model, "_effective_probability", getattr(model, "probability", False))
    if probability and prob_a.shape[0] != n_pairs:
        refuse("probability calibration is missing")
    vectors: Any = getattr(model, "support_vectors_", None)
    dual: Any = getattr(model, "_dual_coef_", None)
    sparse = getattr(model, "_sparse", None)
    if sparse is True:
        if not (sp.issparse(vectors) and vectors.format == "csr" and sp.issparse(dual)):
            refuse("sparse support vectors are not CSR matrices")
        try:
            vectors.check_format(full_check=True)
            dual.check_format(full_check=True)
        except ValueError:
            refuse("sparse support vectors are malformed")
        if vectors.dtype != np.float64 or dual.dtype != np.float64:
            refuse("sparse support vectors are not float64")
        if dual.shape != (n_class - 1, n_sv) or dual.data.shape != ((n_class - 1) * n_sv,):
            refuse("_dual_coef_ does not match its support vectors")
        if vectors.shape != (n_sv, n_features):
            refuse("support vectors do not match its support indices and input width")
    elif sparse is False:
        vectors = _array(model, "support_vectors_", np.float64, 2)
        dual = _array(model, "_dual_coef_", np.float64, 2)
        # A precomputed kernel keeps no vectors: its support indices pick the columns.
        expected = (0, 0) if kernel == "precomputed" else (n_sv, n_features)
        if vectors.shape != expected:
            refuse("support vectors do not match its support indices and input width")
        if dual.shape != (n_class - 1, n_sv):
            refuse("_dual_coef_ does not match its support vectors")
    else:
        refuse("_sparse flag is not a boolean")
    public_dual: Any = getattr(model, "dual_coef_", None)
    if np.shape(public_dual) != dual.shape:
        refuse("dual_coef_ does not match its support vectors")
    gamma = getattr(model, "_gamma", None)
    if not isinstance(gamma, float | np.floating) or not np.isfinite(gamma):
        refuse("kernel coefficient (_gamma) is not a finite number")


def check_svms(model: Any) -> None:
    """Check every libsvm model (``SVC``, ``NuSVC``, ``SVR``, ``NuSVR``, ``OneClassSVM``).

    libsvm reads a fitted model's arrays (support vectors and indices, dual
    coefficients, intercepts, calibration) through raw pointers sized by one
    another, without bounds checks: a crafted file with, say, dual
    coefficients shorter than its support vectors makes ``decision_function``
    read outside them (arbitrary answers). Every array must have the dtype,
    order and shape that scikit-learn's fit gives it.

    Raises
    ------
    ValueError
        Saying which array of which model is inconsistent.
    """
    from sklearn.svm import SVC, SVR, NuSVC, NuSVR, OneClassSVM

    for obj in _objects(model):
        if isinstance(obj, SVC | NuSVC | SVR | NuSVR | OneClassSVM) and hasattr(obj, "support_"):
            _check_svm_arrays(obj)
