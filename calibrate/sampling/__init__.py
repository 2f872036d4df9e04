"""Which cases humans should label (:mod:`~calibrate.sampling.designs`: random, stratified, near the
threshold, where judges disagree, Neyman) and how many (:mod:`~calibrate.sampling.planning`)."""
