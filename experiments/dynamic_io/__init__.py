"""The dynamic_io experiment (experiment.py: its plan; analysis.py: its metrics and section)."""
