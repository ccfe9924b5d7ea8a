"""Stacked evaluation of fitted scikit-learn trees.

A subsample-and-aggregate estimator may hold tens of thousands of small fitted
trees (one per teacher). Calling each tree's ``predict`` costs a fixed Python
overhead per tree and per call, whatever the number of rows; here the nodes of
all trees are laid out in a few flat arrays and every (row, tree) pair descends
one level at a time, vectorised with numpy over blocks of rows and trees whose
size bounds the memory. Single trees whose depth cap is small
(``SHALLOW_LEVELS``) are evaluated without any gather: every split of a
complete tree of that depth is compared, and the leaf's label selected with
bit operations.

The answers are exactly those of each model's own ``predict``:

* the rows are converted to ``float32`` as scikit-learn's trees convert them,
  and every threshold is replaced by the largest ``float32`` not above it, so
  that the ``float32`` comparison ``x <= t32`` equals scikit-learn's
  ``float(x) <= t``;
* a classifier tree answers ``classes_[argmax(value[leaf])]`` (the first
  maximum wins, as in ``numpy.argmax``), a forest the first maximum of the
  trees' class proportions summed in the order of ``estimators_`` and divided
  by their number, as ``RandomForestClassifier.predict_proba`` does when it
  runs in one thread; regressors answer the leaf value, or the mean over the
  forest accumulated in the same order.

Rows that are not finite once in ``float32`` (which the estimators of this
package refuse before they reach their teachers, except values beyond the
``float32`` range), sparse matrices whose indices need 64 bits, and inputs
that do not convert to ``float32`` are not evaluated here:
:meth:`StackedTrees.prepare` returns None and the caller lets every model
answer through its own ``predict``, which raises or not as it does.

Every row descends the same number of levels: the largest public cap on the
depth of the trees (``max_depth``, or ``max_leaf_nodes - 1``), or the depth of
the deepest fitted tree when a tree has neither (which then depends on the
data). A leaf reached early stays where it is, and dense rows are read on all
their columns. So the work per batch depends on the number of rows, columns,
trees and levels, not on the path a row takes nor on the columns the fitted
splits read (except for sparse rows, which are densified on those columns
only).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeClassifier,
    ExtraTreeRegressor,
)
from sklearn.utils.validation import check_array

from .._base import known_label_index
from ._isolation import teacher_call

# Exact types only: a subclass may override ``predict``.
TREE_CLASSIFIER_TYPES = (DecisionTreeClassifier, ExtraTreeClassifier)
TREE_REGRESSOR_TYPES = (DecisionTreeRegressor, ExtraTreeRegressor)
FOREST_CLASSIFIER_TYPES = (RandomForestClassifier, ExtraTreesClassifier)
FOREST_REGRESSOR_TYPES = (RandomForestRegressor, ExtraTreesRegressor)

# Bytes of one (rows x trees) array of a block: blocks of this size stay in the
# CPU's cache, which made the descent about twice as fast as blocks of 8 MiB.
BLOCK_BYTES = 2**19

# Single trees whose depth cap is at most this are evaluated by computing every
# split of a complete tree of that depth and selecting the leaf's label with bit
# operations: a few broadcast comparisons, no gather per (row, tree) and level.
SHALLOW_LEVELS = 3

# Trees evaluated at once (at most; whole forests are never split). Below 2**16
# so that per-row label counts of one block fit in ``uint16``.
TREE_BLOCK = 2**14

_LEAF = -1  # scikit-learn's marker of a leaf in ``tree_.children_left``


def _trees_of(model) -> list | None:
    """The fitted trees whose outputs make ``model``'s prediction, or None if not stackable."""
    kind = type(model)
    if kind in TREE_CLASSIFIER_TYPES or kind in TREE_REGRESSOR_TYPES:
        trees = [model]
    elif kind in FOREST_CLASSIFIER_TYPES or kind in FOREST_REGRESSOR_TYPES:
        trees = list(getattr(model, "estimators_", ()))
        inner = TREE_CLASSIFIER_TYPES if kind in FOREST_CLASSIFIER_TYPES else TREE_REGRESSOR_TYPES
        if not trees or any(type(tree) not in inner for tree in trees):
            return None
    else:
        return None
    if getattr(model, "n_outputs_", None) != 1 or not hasattr(trees[0], "tree_"):
        return None
    if kind in FOREST_CLASSIFIER_TYPES and any(
        tree.tree_.max_n_classes != len(model.classes_) for tree in trees
    ):
        return None
    return trees


def _global_labels(classes: np.ndarray, labels: np.ndarray) -> np.ndarray | None:
    """Index in the sorted public ``classes`` of every label, or None if one is missing."""
    try:
        index, known = known_label_index(classes, labels)
    except TypeError:  # labels of another kind than the public ones (str against int)
        return None
    return index if bool(np.all(known)) else None


def is_stackable(model, classes: np.ndarray | None = None) -> bool:
    """Whether :class:`StackedTrees` evaluates ``model`` exactly.

    ``model`` must be a fitted ``DecisionTree*``, ``ExtraTree*``,
    ``RandomForest*`` or ``ExtraTrees*`` estimator (exactly that class) with
    one output; a classifier's labels must all lie in the public label set
    ``classes`` (sorted); a regressor is stackable only when ``classes`` is None.
    """
    trees = _trees_of(model)
    if trees is None:
        return False
    is_classifier = type(model) in TREE_CLASSIFIER_TYPES or type(model) in FOREST_CLASSIFIER_TYPES
    if classes is None:
        return not is_classifier
    return is_classifier and _global_labels(classes, model.classes_) is not None


def _depth_cap(model, trees: list) -> int:
    """Levels to descend for ``model``: its public depth cap, else its deepest tree."""
    caps = []
    if getattr(model, "max_depth", None) is not None:
        caps.append(int(model.max_depth))
    if getattr(model, "max_leaf_nodes", None) is not None:
        caps.append(int(model.max_leaf_nodes) - 1)
    fitted = max(int(tree.tree_.max_depth) for tree in trees)
    # A cap is never below the fitted depth; max() only guards against a cap
    # that scikit-learn would not honour.
    return max(min(caps), fitted) if caps else fitted


def _float32_floor(threshold: np.ndarray) -> np.ndarray:
    """The largest ``float32`` not above each ``float64`` threshold.

    For a ``float32`` value ``x``, ``x <= t`` holds exactly when ``x <=
    _float32_floor(t)``: the comparison scikit-learn makes in double precision
    can be made in single precision.
    """
    with np.errstate(over="ignore"):  # beyond the float32 range: +-inf, corrected below
        rounded = threshold.astype(np.float32)
    above = rounded.astype(np.float64) > threshold
    rounded[above] = np.nextafter(rounded[above], np.float32(-np.inf))
    return rounded


@dataclass
class _Nodes:
    """All trees' nodes, numbered so that the children of a node are adjacent.

    Tree ``t``'s root is node ``t``. Going left from node ``n`` leads to
    ``first_child[n]``, going right to ``first_child[n] + 1``. A leaf is its
    own first child with threshold ``+inf``: every finite row goes "left" and
    stays there.
    """

    first_child: np.ndarray  # (n_nodes,) intp
    feature: np.ndarray  # (n_nodes,) intp, column of X that the split reads (leaves: 0)
    threshold: np.ndarray  # (n_nodes,) float32
    used_features: np.ndarray  # (n_used,) intp, sorted columns of X the splits read
    sparse_feature: np.ndarray  # (n_nodes,) intp, index into ``used_features``
    old_index: np.ndarray  # (n_nodes,) intp: node in the concatenated ``tree_`` arrays
    tree: np.ndarray  # (n_nodes,) intp: the tree each node belongs to
    levels: int


def _stack_nodes(trees: list, levels: int) -> _Nodes:
    """Lay out the nodes of ``trees`` breadth first, all trees together."""
    structures = [tree.tree_ for tree in trees]
    sizes = np.array([s.node_count for s in structures], dtype=np.intp)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
    shift = np.repeat(offsets, sizes)
    left = np.concatenate([s.children_left for s in structures]).astype(np.intp)
    right = np.concatenate([s.children_right for s in structures]).astype(np.intp)
    feature = np.concatenate([s.feature for s in structures]).astype(np.intp)
    threshold = np.concatenate([s.threshold for s in structures]).astype(np.float64)
    is_leaf = left == _LEAF
    left = np.where(is_leaf, -1, left + shift)
    right = np.where(is_leaf, -1, right + shift)

    n_nodes = left.size
    old_index = np.empty(n_nodes, dtype=np.intp)  # new id -> old id
    first_child = np.empty(n_nodes, dtype=np.intp)  # by new id
    tree = np.empty(n_nodes, dtype=np.intp)  # by new id
    frontier = offsets  # old ids of the current level, in new-id order
    old_index[: frontier.size] = frontier
    tree[: frontier.size] = np.arange(frontier.size)
    next_free = frontier.size
    start = 0
    while frontier.size:
        ids = np.arange(start, start + frontier.size)
        leaf = is_leaf[frontier]
        first_child[ids[leaf]] = ids[leaf]
        internal = frontier[~leaf]
        children = np.empty(2 * internal.size, dtype=np.intp)
        children[0::2] = left[internal]
        children[1::2] = right[internal]
        first_child[ids[~leaf]] = next_free + 2 * np.arange(internal.size)
        old_index[next_free : next_free + children.size] = children
        tree[next_free : next_free + children.size] = np.repeat(tree[ids[~leaf]], 2)
        start, next_free = next_free, next_free + children.size
        frontier = children
    if next_free != n_nodes:  # every node is reachable from its root in a fitted tree
        raise ValueError("a fitted tree has nodes that its root does not reach.")

    leaf = is_leaf[old_index]
    split_feature = feature[old_index]
    used = np.unique(split_feature[~leaf])
    if used.size == 0:
        used = np.zeros(1, dtype=np.intp)  # every tree is a single leaf: read any column
    compact = np.where(leaf, 0, np.searchsorted(used, split_feature))
    thresholds = _float32_floor(threshold[old_index])
    thresholds[leaf] = np.inf
    return _Nodes(
        first_child=first_child,
        feature=np.where(leaf, 0, split_feature).astype(np.intp),
        threshold=thresholds,
        used_features=used.astype(np.intp),
        sparse_feature=compact.astype(np.intp),
        old_index=old_index,
        tree=tree,
        levels=levels,
    )


@dataclass
class _Group:
    """Models of one kind with the same number of trees and of outputs per tree.

    Their trees are ``first_tree, first_tree + 1, ...``, model after model, in
    the order of each forest's ``estimators_``.
    """

    model_ids: np.ndarray  # (n_models,) position of each model in the list given
    first_tree: int
    trees_per_model: int
    n_outputs: int  # classes of each model (classifiers), 1 (regressors)
    labels: np.ndarray | None  # (n_models, n_outputs) global label index (classifiers)


class StackedTrees:
    """Fitted scikit-learn trees and forests evaluated together.

    Parameters
    ----------
    models : list
        Fitted models, each accepted by :func:`is_stackable` with the same
        ``classes``.
    classes : ndarray or None
        The public label set (sorted) for classifiers; None for regressors.
    """

    def __init__(self, models: list, classes: np.ndarray | None = None) -> None:
        self.classes = classes
        self.n_models = len(models)
        tree_lists: list[list] = []
        for model in models:
            trees = _trees_of(model)
            if trees is None:
                raise ValueError("every model must be a fitted tree or forest (see is_stackable).")
            tree_lists.append(trees)
        levels = max(1, *(_depth_cap(m, t) for m, t in zip(models, tree_lists)))
        kinds: dict[tuple[int, int], list[int]] = {}
        for i, (model, trees) in enumerate(zip(models, tree_lists)):
            width = 1 if classes is None else len(model.classes_)
            kinds.setdefault((len(trees), width), []).append(i)
        ordered_trees: list = []
        self._groups: list[_Group] = []
        for (per_model, width), ids in sorted(kinds.items()):
            labels = None
            if classes is not None:
                labels = np.array([_global_labels(classes, models[i].classes_) for i in ids])
            self._groups.append(
                _Group(np.array(ids, dtype=np.intp), len(ordered_trees), per_model, width, labels)
            )
            for i in ids:
                ordered_trees.extend(tree_lists[i])
        self.n_trees = len(ordered_trees)
        self._nodes = _stack_nodes(ordered_trees, levels)
        width = max(group.n_outputs for group in self._groups)
        values = np.concatenate([_node_values(tree, width) for tree in ordered_trees])
        self._values = values[self._nodes.old_index]  # (n_nodes, width) in new node order
        self._leaf_labels = self._single_tree_labels()
        self._shallow = (
            self._complete_tables()
            if self._leaf_labels is not None and levels <= SHALLOW_LEVELS
            else None
        )

    def _complete_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every tree as a complete tree of depth ``levels``, in heap order.

        Slot 0 is the root, the children of slot ``s`` are ``2 s + 1`` and
        ``2 s + 2``; a leaf above the last level fills both its child slots
        (threshold ``+inf``: rows go left, to itself). Returns the feature (a
        column of X, and an index into ``used_features``) and threshold of the
        ``2**levels - 1`` split slots and the label of the ``2**levels`` leaf
        slots, each of shape (slots, n_trees).
        """
        nodes = self._nodes
        assert self._leaf_labels is not None
        n_split = 2**nodes.levels - 1
        slots = np.empty((2 * n_split + 1, self.n_trees), dtype=np.intp)
        slots[0] = np.arange(self.n_trees)
        for slot in range(n_split):
            node = slots[slot]
            leaf = nodes.first_child[node] == node
            slots[2 * slot + 1] = np.where(leaf, node, nodes.first_child[node])
            slots[2 * slot + 2] = np.where(leaf, node, nodes.first_child[node] + 1)
        split = slots[:n_split]
        return (
            nodes.feature[split],
            nodes.sparse_feature[split],
            nodes.threshold[split],
            self._leaf_labels[slots[n_split:]],
        )

    def _single_tree_labels(self) -> np.ndarray | None:
        """Global label voted at every node by single-tree classifiers (their own argmax)."""
        if self.classes is None:
            return None
        dtype = np.min_scalar_type(max(len(self.classes) - 1, 0))
        table = np.zeros(self._values.shape[0], dtype=dtype)
        tree_of_node = self._nodes.tree
        for group in self._groups:
            if group.trees_per_model != 1:
                continue
            trees = slice(group.first_tree, group.first_tree + len(group.model_ids))
            nodes = np.flatnonzero((tree_of_node >= trees.start) & (tree_of_node < trees.stop))
            local = np.argmax(self._values[nodes, : group.n_outputs], axis=1)
            assert group.labels is not None
            table[nodes] = group.labels[tree_of_node[nodes] - trees.start, local]
        return table

    # -- input -------------------------------------------------------------------------------
    def prepare(self, X):
        """``X`` as scikit-learn's trees read it (``float32``), or None to use each ``predict``.

        None when the rows do not convert, are not all finite, or are a sparse
        matrix with 64-bit indices (which scikit-learn's trees refuse): the
        models then answer through their own ``predict``, raising or not as
        they do.
        """
        try:
            X32 = check_array(X, accept_sparse="csr", dtype=np.float32, ensure_all_finite=False)
        except (TypeError, ValueError):
            return None
        if sparse.issparse(X32):
            if X32.indices.dtype != np.intc or X32.indptr.dtype != np.intc:
                return None
            finite = np.isfinite(X32.data).all()
        else:
            finite = np.isfinite(X32).all()
        return X32 if finite else None

    def _columns(self, X32, rows: slice) -> np.ndarray:
        """``rows`` dense and C-contiguous: every column, or the used ones of a sparse matrix.

        Dense rows keep every column, so that the work depends on the public
        width of X and not on which columns the fitted splits read; a sparse
        matrix is densified on the columns the splits read only (its nodes
        then use ``sparse_feature``).
        """
        block = X32[rows]
        if sparse.issparse(block):
            used = self._nodes.used_features
            return np.ascontiguousarray(block[:, used].toarray(), dtype=np.float32)
        return np.ascontiguousarray(block)

    # -- descent -----------------------------------------------------------------------------
    def _leaves(self, X_block: np.ndarray, first: int, stop: int, feature) -> np.ndarray:
        """Leaf reached by every row of ``X_block`` in trees ``first:stop`` (rows x trees).

        ``feature`` gives the column of ``X_block`` each node reads.
        """
        nodes = self._nodes
        n_rows, n_columns = X_block.shape
        roots = slice(first, stop)
        if n_columns == 1:  # one column: compare it to every root, no gather
            go_right = X_block > nodes.threshold[roots]
        else:
            go_right = np.take(X_block, feature[roots], axis=1) > nodes.threshold[roots]
        node = nodes.first_child[roots] + go_right
        flat = X_block.ravel()
        row_start = (np.arange(n_rows, dtype=np.intp) * n_columns)[:, None]
        for _ in range(1, nodes.levels):
            if n_columns == 1:
                values = X_block
            else:
                cells = feature[node]
                cells += row_start
                values = flat[cells]
            go_right = values > nodes.threshold[node]
            node = nodes.first_child[node]
            node += go_right
        return node

    def _shallow_labels(
        self, X_block: np.ndarray, first: int, stop: int, sparse_rows: bool
    ) -> np.ndarray:
        """Labels of single-tree classifiers ``first:stop`` from their complete tables.

        Every split slot is evaluated; from the bottom up, a slot's label is
        its left child's, switched to its right child's where the row goes
        right: ``left ^ (go_right * (left ^ right))`` on small unsigned
        integers. The work is the same for every row and tree.
        """
        assert self._shallow is not None
        dense_feature, sparse_feature, threshold, leaf_label = self._shallow
        feature = sparse_feature if sparse_rows else dense_feature
        trees = slice(first, stop)
        n_split = threshold.shape[0]
        label = {n_split + k: leaf_label[k, trees] for k in range(n_split + 1)}
        for slot in reversed(range(n_split)):
            left, right = label.pop(2 * slot + 1), label.pop(2 * slot + 2)
            if X_block.shape[1] == 1:  # one column: compared with every tree, no gather
                go_right = X_block > threshold[slot, trees]
            else:
                go_right = np.take(X_block, feature[slot, trees], axis=1) > threshold[slot, trees]
            label[slot] = left ^ (go_right.view(np.uint8) * (left ^ right))
        return label[0]

    def _blocks(self, group: _Group):
        """(first model, stop model, first tree, stop tree) of tree blocks within ``group``."""
        per_model = group.trees_per_model
        models_per_block = max(1, TREE_BLOCK // per_model)
        n_models = len(group.model_ids)
        for start in range(0, n_models, models_per_block):
            stop = min(start + models_per_block, n_models)
            yield (
                start,
                stop,
                group.first_tree + start * per_model,
                group.first_tree + stop * per_model,
            )

    def _row_blocks(self, n_rows: int, n_trees: int, bytes_per_pair: int):
        step = max(1, BLOCK_BYTES // (bytes_per_pair * max(n_trees, 1)))
        for start in range(0, n_rows, step):
            yield slice(start, min(start + step, n_rows))

    def _group_outputs(self, X32, group: _Group, on_block) -> None:
        """Call ``on_block(rows, first_model, stop_model, outputs)`` over bounded blocks.

        ``outputs`` holds, per row and model of the block, the global label
        index (classifiers) or the predicted value (regressors).
        """
        n_rows = X32.shape[0]
        per_model = group.trees_per_model
        shallow = per_model == 1 and self._shallow is not None
        sparse_rows = sparse.issparse(X32)
        feature = self._nodes.sparse_feature if sparse_rows else self._nodes.feature
        n_columns = len(self._nodes.used_features) if sparse_rows else X32.shape[1]
        # Bytes per (row, tree) of the largest arrays: float32 values gathered and
        # one-byte labels (shallow), or node indices.
        bytes_per_pair = (1 if n_columns == 1 else 4) if shallow else 8
        for start, stop, first, last in self._blocks(group):
            for rows in self._row_blocks(n_rows, last - first, bytes_per_pair):
                X_block = self._columns(X32, rows)
                if shallow:
                    labels = self._shallow_labels(X_block, first, last, sparse_rows)
                    on_block(rows, start, stop, labels)
                    continue
                leaves = self._leaves(X_block, first, last, feature)
                if per_model == 1 and self._leaf_labels is not None:
                    outputs = self._leaf_labels[leaves]
                elif per_model == 1:
                    outputs = self._values[leaves, 0]
                else:
                    outputs = self._forest_outputs(leaves, group, start, stop)
                on_block(rows, start, stop, outputs)

    def _forest_outputs(self, leaves: np.ndarray, group: _Group, start: int, stop: int):
        """Forest answers from their trees' leaves, summed in ``estimators_`` order."""
        per_model, width = group.trees_per_model, group.n_outputs
        leaves = leaves.reshape(leaves.shape[0], stop - start, per_model)
        total = np.zeros((leaves.shape[0], stop - start, width), dtype=np.float64)
        for j in range(per_model):
            total += self._values[leaves[:, :, j], :width]
        total /= per_model
        if self.classes is None:
            return total[:, :, 0]
        assert group.labels is not None
        local = np.argmax(total, axis=2)
        return np.take_along_axis(group.labels[start:stop][None, :, :], local[:, :, None], axis=2)[
            :, :, 0
        ]

    # -- answers -----------------------------------------------------------------------------
    def vote_counts(self, X32) -> np.ndarray:
        """Votes per public label, shape (n_rows, n_classes) (classifiers)."""
        assert self.classes is not None
        n_classes = len(self.classes)
        counts = np.zeros((X32.shape[0], n_classes), dtype=np.int64)

        def add(rows, start, stop, labels):
            n_models = stop - start
            block = counts[rows]  # a view: rows is a slice
            counted = np.zeros(labels.shape[0], dtype=np.int64)
            for label in range(1, n_classes):
                hits = labels == label
                column = np.add.reduce(hits.view(np.uint8), axis=1, dtype=np.uint16)
                block[:, label] += column
                counted += column
            block[:, 0] += n_models - counted

        for group in self._groups:
            self._group_outputs(X32, group, add)
        return counts

    def votes(self, X32) -> np.ndarray:
        """Global label index voted by every model, shape (n_rows, n_models) (classifiers)."""
        assert self.classes is not None
        return self._outputs(X32, np.intp)

    def predictions(self, X32) -> np.ndarray:
        """Every model's prediction, shape (n_rows, n_models) (regressors)."""
        assert self.classes is None
        return self._outputs(X32, np.float64)

    def _outputs(self, X32, dtype) -> np.ndarray:
        out = np.empty((X32.shape[0], self.n_models), dtype=dtype)
        for group in self._groups:

            def put(rows, start, stop, outputs, ids=group.model_ids):
                out[rows, ids[start:stop]] = outputs

            self._group_outputs(X32, group, put)
        return out


def _node_values(tree, width: int) -> np.ndarray:
    """A tree's node values, shape (n_nodes, width), zero-padded on the right."""
    values = tree.tree_.value.reshape(tree.tree_.node_count, -1)
    if values.shape[1] == width:
        return values
    padded = np.zeros((values.shape[0], width), dtype=values.dtype)
    padded[:, : values.shape[1]] = values
    return padded


class StackedPredictions:
    """Every fitted regressor's ``predict``, the trees and forests among them stacked.

    Parameters
    ----------
    models : list
        Fitted regressors of any kind; those :func:`is_stackable` accepts are
        evaluated together by :class:`StackedTrees`, the others by their own
        ``predict``.
    """

    def __init__(self, models: list) -> None:
        self._models = models
        self._stacked_ids: list[int] = []
        self._stacked = None
        try:  # every read of a fitted model in isolation; a failure: each its own predict
            with teacher_call():
                stacked_ids = [i for i, model in enumerate(models) if is_stackable(model)]
                if stacked_ids:
                    self._stacked = StackedTrees([models[i] for i in stacked_ids])
                    self._stacked_ids = stacked_ids
        except Exception:  # noqa: BLE001 - reading a fitted teacher may raise
            self._stacked, self._stacked_ids = None, []

    def each(self, X, predict: Callable[[Any, Any], np.ndarray]) -> Iterator[np.ndarray]:
        """``models[i].predict(X)`` for every ``i``, in order (equal values).

        The models that are not stacked (and every model, when the stacked
        trees do not take this batch) are evaluated by ``predict(model, X)``,
        which the caller makes robust to a model that fails on some rows.
        """
        X32 = None if self._stacked is None else self._stacked.prepare(X)
        stacked: dict[int, np.ndarray] = {}
        if self._stacked is not None and X32 is not None:
            stacked = dict(zip(self._stacked_ids, self._stacked.predictions(X32).T))
        for i, model in enumerate(self._models):
            yield stacked[i] if i in stacked else predict(model, X)
