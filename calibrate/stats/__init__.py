"""Pure statistics on arrays: agreement, bootstrap, intervals, curves, thresholds (no campaign, no I/O)."""

#: the number of bootstrap resamples of cases, one default for every interval of every command
N_BOOT = 1000
