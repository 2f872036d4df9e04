"""Collect cases from a live RAG service over an HTTP contract (``calibrate collect``):
:mod:`calibrate.collect.contract` reads ``[service]``, :mod:`calibrate.collect.runner` calls and stores."""
