"""A campaign in, a statistics document out: judges against humans (:mod:`.agreement`), annotators
against each other (:mod:`.annotators`), judges against judges (:mod:`.versus`), repeatability, bias,
calibration maps and the pass rate of a large judge-scored set."""
