"""corun analysis: recompute the papers' metrics from collected run data, set the papers'
published values beside ours, and write one self-contained HTML report.

Modules: paper (published values), runmeta (run metadata summaries and missing measurements),
sensitivity (paper 000, Sensitivity_RANKING, Fig. 13-14), report (the generic HTML report),
metrics (the per-run metric registry), runindex (run records, selection, the SQLite index),
compare_runs (corun compare), synthetic (synthetic run folders for tests and benchmarks).
"""
