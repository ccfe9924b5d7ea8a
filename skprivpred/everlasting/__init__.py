"""Private everlasting prediction (Naor, Nissim, Stemmer & Yan, NeurIPS 2023).

An everlasting predictor answers an unbounded stream of queries, one label per
query, and keeps learning *from the queries*: every phase's teachers are
trained on the previous phase's queries, labelled by the predictor itself. The
guarantee covers every training row and every query, once, for the whole
stream: no budget runs out with time.

Two public estimators share one stream engine (:class:`_EverlastingStream`):

- :class:`GenericBBLClassifier`, the paper's Algorithm GenericBBL (Section 5)
  as written (subsample-and-aggregate teachers, BetweenThresholds with its
  halting budget, LabelBoost relabelling, privacy-amplifying sub-samples). At
  the paper's constants it needs about 1e25 labelled rows, so ``constants="paper"``
  mostly computes the schedule and says how much data is missing;
  ``constants="simulation"`` runs the same code with scaled-down sizes and no
  guarantee.
- :class:`PrivateEverlastingClassifier`, a practical variant (not in the
  paper): any scikit-learn teacher, an independent Gaussian noisy vote per
  query, and the next phase trained on the released answers (relabelled
  through the task's class when one is given), in phases that grow as the
  paper's do, private in the paper's sense (Definition 3.4, the game of
  Figure 1); :func:`practical_schedule` gives its public sizes.

Every parameter formula of Algorithm GenericBBL lives in this module's
"formulas" section, once; the estimators, :func:`genericbbl_plan` and the tests
all call it. BetweenThresholds itself is in :mod:`skprivpred.mechanisms`; every
conversion and composition between ``(epsilon, delta)`` and zCDP's ``rho`` is
in :mod:`skprivpred.accounting`.
"""

from ._genericbbl import GenericBBLClassifier
from ._hypothesis_class import LIBRARY_CLASSES as LIBRARY_CLASSES
from ._hypothesis_class import ROWWISE_CLASS_METHODS as ROWWISE_CLASS_METHODS
from ._plan import LABELBOOST_EPSILON as LABELBOOST_EPSILON
from ._plan import OVERRIDE_KEYS as OVERRIDE_KEYS
from ._plan import PAPER_PARAMETER_BOUND as PAPER_PARAMETER_BOUND
from ._plan import PHASE_QUERY_FACTOR as PHASE_QUERY_FACTOR
from ._plan import PRACTICAL_GROWTH as PRACTICAL_GROWTH
from ._plan import PRACTICAL_MARGIN as PRACTICAL_MARGIN
from ._plan import PRACTICAL_Z as PRACTICAL_Z
from ._plan import RELABEL_RHO_SHARE as RELABEL_RHO_SHARE
from ._plan import SIMULATION_DEFAULTS as SIMULATION_DEFAULTS
from ._plan import SIMULATION_ONLY_KEYS as SIMULATION_ONLY_KEYS
from ._plan import SIMULATION_PHASE_LENGTH_POOLS as SIMULATION_PHASE_LENGTH_POOLS
from ._plan import TAU as TAU
from ._plan import TOP_BUDGET_FACTOR as TOP_BUDGET_FACTOR
from ._plan import GenericBBLPhase as GenericBBLPhase
from ._plan import PracticalPhase as PracticalPhase
from ._plan import amplification_denominator as amplification_denominator
from ._plan import bt_instance_privacy as bt_instance_privacy
from ._plan import gaussian_vote_sigma as gaussian_vote_sigma
from ._plan import genericbbl_plan, practical_plan, practical_schedule
from ._plan import largest_top_budget as largest_top_budget
from ._plan import paper_n_teachers as paper_n_teachers
from ._plan import paper_required_samples as paper_required_samples
from ._plan import practical_bt_privacy as practical_bt_privacy
from ._plan import relabel_epsilon as relabel_epsilon
from ._plan import vc_teacher_size as vc_teacher_size
from ._practical import PrivateEverlastingClassifier
from ._relabel import label_boost as label_boost
from ._relabel import labelboost_law as labelboost_law
from ._relabel import relabel_law as relabel_law
from ._relabel import relabel_through_class as relabel_through_class
from ._stream import STATUS_ACTIVE as STATUS_ACTIVE
from ._stream import STATUS_HALTED as STATUS_HALTED

__all__ = [
    "GenericBBLClassifier",
    "PrivateEverlastingClassifier",
    "genericbbl_plan",
    "practical_plan",
    "practical_schedule",
]
