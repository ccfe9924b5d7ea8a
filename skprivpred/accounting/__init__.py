"""Privacy budgets shared across queries, estimators, copies, processes and machines.

A :class:`PrivacyAccountant` is the one place where the privacy loss of every
released answer is added up. Estimators charge it for all the rows of a query
call *before* they draw any noise; a charge that would exceed the budget raises
:class:`BudgetExhaustedError` and changes nothing.

What was spent lives in the accountant's *ledger* (:mod:`skprivpred.accounting._ledger`: a
SQLite file by default, a PostgreSQL server across machines, memory only when
asked for), never only in the Python object. ``copy.copy``, ``copy.deepcopy``
and ``sklearn.base.clone`` hand an estimator's copy the *same* accountant
object; a pickled copy (joblib workers, ``joblib.dump``, another process)
reopens the same ledger. Either way every copy charges one budget, and an
accountant whose ledger is gone raises :class:`LedgerError` rather than start
again from zero. The arithmetic of composition is here, once.

Several budgets of one ledger can be charged together, in one transaction
(:meth:`PrivacyAccountant.charging_also`): a service charges a client's quota
exactly when, and for what, its global budget is charged.
"""

from ._accountant import LEDGER_KEY_FILE_VARIABLE as LEDGER_KEY_FILE_VARIABLE
from ._accountant import ChargeRecord, PrivacyAccountant
from ._accountant import ledger_addresses_without_passwords as ledger_addresses_without_passwords
from ._composition import (
    advanced_composition,
    advanced_composition_epsilon,
    advanced_composition_inverse,
    eps_of_rho,
    max_queries,
    per_query_epsilon,
    rho_cap,
    zcdp_rho,
)
from ._guarantee import PER_QUERY_ROW, GuaranteeUnit, PrivacyGuarantee

__all__ = [
    "PER_QUERY_ROW",
    "ChargeRecord",
    "GuaranteeUnit",
    "PrivacyAccountant",
    "PrivacyGuarantee",
    "advanced_composition",
    "advanced_composition_epsilon",
    "advanced_composition_inverse",
    "eps_of_rho",
    "max_queries",
    "per_query_epsilon",
    "rho_cap",
    "zcdp_rho",
]
