"""The private teacher engine: disjoint partitions, isolated teachers, their votes.

Nothing here is public. The subsample-and-aggregate estimators (:mod:`skprivpred.ensemble`)
and the everlasting predictors fit their teachers and read their votes through it:

- ``_partition``: data-independent partitions (``random_partition``, the keyed
  permutation of dask fits);
- ``_isolation``: the boundary around user code (teachers, callables);
- ``_dry_run``: the checks a query passes before anything is charged;
- ``_fit``: fitting the teachers; ``_votes``: the fitted ensemble and its stacked votes;
- ``_trees`` and ``_folding``: stacked trees and folded linear pipelines;
- ``_rows`` and ``_input``: row helpers and input checks shared by the layers above;
- ``_dask``, ``_dask_teachers``, ``_dask_queries``: dask collections, at fit and query.
"""
