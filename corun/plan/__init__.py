"""What an experiment's plan is built from: the plugin interface (`base.Experiment`), the device a
run reads from, calibration of readers, CMP stacking, and the file system clients of the parallel
file system experiments. The experiments themselves live in experiments/<name>/."""
