"""The io_latency_split experiment (experiment.py: its plan; analysis.py: its metrics and section)."""
