"""Optional matplotlib views of fitted MRFs: graphs, couplings, grids and traces.

Every plotting function takes a fitted estimator (discrete or Gaussian) or a
:class:`~skmrf.model.DiscreteMRF`, draws on ``ax`` (the current Axes when None) and returns
the Axes. matplotlib is imported inside the functions, so ``import skmrf`` does not need it;
install it with ``pip install skmrf[plot]``.

The views read public attributes, not classes: a fitted discrete estimator is its
``model_`` (a :class:`~skmrf.model.DiscreteMRF`), a Gaussian one its ``precision_`` (and
``adjacency_``, the pattern, when it has one: else the non-zeros of ``precision_``), so any
object with those attributes is drawn the same way (a scikit-learn ``GraphicalLasso``, a
wrapper of a fitted estimator). :func:`plot_trace` draws what ``__skmrf_trace__()`` returns,
a :class:`Trace`.

What a coupling is:

- discrete models: the parameter block of edge ``(i, j)`` (one value per pair of non-zero
  states, the package's parametrisation normalised with respect to zero), reduced to one
  number: its entry of largest magnitude, with its sign (``kind="maxabs"``, the coupling itself
  for binary variables), or its Frobenius norm (``kind="norm"``);
- Gaussian models: the partial correlation ``-P_ij / sqrt(P_ii P_jj)`` of the precision matrix
  ``P`` (``kind="partial_correlation"``) or the precision entry ``P_ij`` itself
  (``kind="precision"``). ``precision_`` may be a dense array or a scipy.sparse array.
"""

from ._couplings import coupling_matrix, edge_couplings, node_values, plot_couplings
from ._graph import plot_graph
from ._grid import plot_grid
from ._trace import Trace, plot_trace

__all__ = [
    "Trace",
    "coupling_matrix",
    "edge_couplings",
    "node_values",
    "plot_couplings",
    "plot_graph",
    "plot_grid",
    "plot_trace",
]
