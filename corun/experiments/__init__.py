"""Experiment helpers called by the workflow rules: data files, calibration, run specs."""
