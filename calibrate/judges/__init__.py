"""Judges: the DeepEval and RAGAS adapters, the model clients and their calls (:mod:`.calls`), the
runner that scores a campaign's cases concurrently (:mod:`.runner`), the store of every attempt that
serves as cache (:mod:`.store`), and the bias probes that re-score perturbed cases (:mod:`.probes`)."""
