# Snakemake's scheduler kept quiet while runs measure: its rate limiter's timers coalesced, one at
# most and only when the limit holds a job back (corun/snakemake_scheduler.py says why; upstream
# https://github.com/snakemake/snakemake/issues/2354). Included first by the Snakefile.
from corun.snakemake_scheduler import quiet_reevaluation

SCHEDULER_PATCH = quiet_reevaluation()
