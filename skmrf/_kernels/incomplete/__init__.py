"""Kernels of incomplete data: the observed-data log-likelihood decomposed on the always-observed
variables and compressed to distinct patterns (EM paper), its planning and cost model, and the EM
and gradient loops that maximise it.
"""
