"""The charging process of the ledger's crash, concurrency and restart tests.

Run in a child forked by the test (cheap: many per test) or by a new interpreter
(a true restart). Either way it attaches to the budget and charges one row at a
time, reporting each committed charge.
"""

from __future__ import annotations

import json
from typing import TextIO

from skprivpred import BudgetExhaustedError, PrivacyAccountant


def charge_and_report(
    out: TextIO, ledger: str, name: str, total: float, epsilon: float, calls: int
) -> None:
    """Charge ``epsilon`` per row to the budget ``name`` (cap ``total``), reporting on ``out``.

    Writes ``ready``, then ``answered k`` after each committed charge, and after
    ``calls`` calls (``-1``: until the process is killed) a JSON line of the rows
    answered and refused. Every line is flushed as it is written.
    """

    def say(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    acc = PrivacyAccountant(epsilon=total, ledger=ledger, name=name)
    say("ready")
    answered = refused = i = 0
    while calls < 0 or i < calls:
        i += 1
        try:
            acc.charge(1, epsilon, source="worker")
        except BudgetExhaustedError:
            refused += 1
            continue
        answered += 1
        say(f"answered {answered}")  # only after the charge is committed
    say(json.dumps({"answered": answered, "refused": refused}))
