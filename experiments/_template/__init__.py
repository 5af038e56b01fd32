"""The experiment to copy (docs/howto/add-an-experiment.md): a variant against the baseline on
duplicated jobs, one claim judged by the verdict engine. Not registered (its name starts with _)."""
