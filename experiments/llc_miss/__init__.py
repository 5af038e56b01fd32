"""The llc_miss experiment (experiment.py: its plan; analysis.py: its metrics and section)."""
