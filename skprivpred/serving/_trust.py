"""What a model file may hold: the types it may construct, and the checks after loading.

A model file is read with :mod:`skops.io`, which constructs only the types it is
told to trust (it never unpickles). The types trusted by default are

* those that skops trusts by default: scikit-learn's estimators and the
  builtin, NumPy and SciPy types they hold;
* scikit-learn's decision-tree storage (``sklearn.tree._tree.Tree``), which
  skops leaves out because a crafted node array can make ``predict`` read out
  of bounds: every tree is checked here, after loading and before any answer
  (:func:`check_trees`);
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
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = [
    "SKPRIVPRED_STATE_TYPES",
    "TREE_TYPE",
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
    "skprivpred.accounting.PrivacyAccountant",
    "skprivpred.accounting.PrivacyGuarantee",
    # Restores only its answered-row count; its noise generator is always new.
    "skprivpred._base.QueryStream",
    "skprivpred._teachers.TeacherEnsemble",
    "skprivpred._teachers._LinearStack",
    "skprivpred._teachers.ConstantTeacher",
    # The newest journal row an accountant has seen (to refuse a rolled-back ledger).
    "skprivpred._ledger.Mark",
    # Stacked tree teachers: node arrays copied from the (checked) fitted trees.
    "skprivpred._trees.StackedTrees",
    "skprivpred._trees.StackedPredictions",
    "skprivpred._trees._Nodes",
    "skprivpred._trees._Group",
    "skprivpred._folding.FoldedLinear",
    "skprivpred._folding._Affine",
    "skprivpred.linear._ScoreRelease",
    "skprivpred.preprocessing.PublicOneHotEncoder",
    "skprivpred.preprocessing.PublicScaler",
    "skprivpred.hypotheses.ConjunctionClass",
    "skprivpred.hypotheses._Conjunction",
    "skprivpred.hypotheses.GridThresholdClass",
    "skprivpred.hypotheses._Threshold",
    "skprivpred.hypotheses.HypothesisList",
    "skprivpred.hypotheses._Listed",
)


def _type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _process_local_types() -> tuple[type, ...]:
    from ..everlasting import GenericBBLClassifier, PrivateEverlastingClassifier

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
    return sorted({TREE_TYPE, *SKPRIVPRED_STATE_TYPES, *estimators})


def _objects(root: Any) -> Iterator[Any]:
    """Every object reachable from ``root`` through attributes, containers and object arrays."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, str | bytes | int | float | bool):
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
