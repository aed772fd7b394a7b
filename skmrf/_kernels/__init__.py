"""Kernels: one fitting method each, on data an estimator has already validated.

A kernel takes the model (a :class:`~skmrf.model.DiscreteMRF` with its graph and states, or its
:class:`~skmrf._parametrisation.CliqueLayout`), the data as :class:`~skmrf._data.Rows` or as the
statistics the method needs (clique counts, compressed rows), the ridge ``alpha`` and the
method's options, and returns the parameters with a record of the run (``theta, info``). It
never validates user input, never computes ``log Z`` for scoring and never builds an estimator:
methods combine by calling kernels (MCMC maximum likelihood starts at the pseudo-likelihood
kernel's estimate; EM's M-step is the exact kernel). The estimators in :mod:`skmrf.estimators`
are thin classes on top: they validate once, call a kernel and store what it returns.
"""
