"""The noisy_neighbour experiment (experiment.py: its plan; analysis.py: its metrics and section)."""
