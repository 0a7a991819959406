"""Stability statistics: pure functions from the per-variant deltas table to tables (METHOD.md 5–6).

Layers, each a module of small pure functions::

    sgs           scaled deltas → s_X(i) per item (and family) → SGS + bootstrap CI; noise floor; accuracy
    significance  one-sided t / Wilcoxon tests against ε, markers, Holm and Benjamini–Hochberg
    ranking       paired bootstrap on shared items: ranks, rank intervals, tie groups, Wilcoxon, Friedman
    agreement     Kendall τ_b per dataset pair, Kendall's W, rank reversals
    independence  Spearman between measures, the Pareto table, accuracy vs SGS
    sample_size   SGS and model ordering on random item subsets
    summary       summary.json of one submission        leaderboard  leaderboard.json of all

`sago analyze` (reading results folders, staging and renaming the outputs) is ``benchmark.pipeline``.

Format of the outputs: docs/LEADERBOARD_JSON.md.
"""
