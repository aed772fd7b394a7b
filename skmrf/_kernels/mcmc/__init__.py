"""MCMC maximum likelihood: the chains, the constraint set, and the two schedules' kernels.

- :mod:`.chains`: :class:`~.chains.Chains`, the one chain runner, and the natural-gradient step;
- :mod:`.constraint`: the constraint set and its projections, set up once for both schedules;
- :mod:`.adaptive`: persistent chains, natural steps, a noise-level stopping rule (the default);
- :mod:`.theory`: Domke's (2015) Algorithm 1 with its K/M/v schedule inside a fast-mixing set;
- :mod:`.fast_mixing`, :mod:`.spectral`: the sets, their mixing constants and projections;
- :mod:`.expectations`: exact expectations that replace the chains in tests.
"""
