"""Human labels: Label Studio projects pushed and pulled (:mod:`~calibrate.humans.labelstudio`) and the
adjudication of the cases annotators disagree on (:mod:`~calibrate.humans.adjudication`)."""
