"""Decisions with exit codes: the judge-upgrade audit (:mod:`.audit`) and the CI gate (:mod:`.gate`)."""
