"""skprivpred's speed across revisions, for airspeed velocity (``asv``).

The configuration is ``asv.conf.json`` at the repository root; how to run the suite and
compare two revisions is in ``benchmarks/README.md``. Every benchmark uses the public API
only (plus the estimators' documented parameters), so that it runs against older and newer
revisions alike; each is small enough for the whole suite to run in a few minutes.
"""
