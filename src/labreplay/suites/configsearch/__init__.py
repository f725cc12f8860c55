"""Configsearch suite: AutoMatBench-style OOD benchmark configurations (r, n, s), searched by
Bayesian optimisation on real Materials Project (Matbench) and JARVIS-DFT data.

A configsearch run is a budgeted campaign whose experiments are benchmark evaluations: one
evaluation trains and tests one model under one configuration. Every evaluation is stored
(suite `configsearch`) with the search trajectory as hash-chained events.
"""
