"""The mpl_sweep experiment (experiment.py: its plan; analysis.py: its metrics and section)."""
