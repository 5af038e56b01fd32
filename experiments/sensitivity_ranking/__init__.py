"""The sensitivity_ranking experiment (experiment.py: its plan; analysis.py: its metrics and section)."""
