"""Lattice patterns and the stationary-torus preconditioner of the Newton system.

On a pattern that is a translation-invariant stencil on an ``r1 x r2`` grid
(the 5-point lattice, the 13-point pattern of its square, ...), the Newton
operator of covariance selection, ``U -> P_V(W U W)`` with ``W = inv(Theta)``,
is approximated by the same operator for a *stationary torus model*: the
stencil of the current ``Theta`` (the median of its entries per lattice
offset, over interior sites), wrapped periodically. That operator is
translation invariant, so 2-D FFTs block-diagonalise it: one ``b x b`` block
per frequency, ``b`` the number of stencil offsets (the diagonal included),
and its inverse costs a few FFTs per application. The stencil is shifted so
that the smallest eigenvalue of the torus model equals that of the stencil
with Dirichlet (zero) boundary conditions, which the torus would otherwise
underestimate (a Laplacian's torus symbol vanishes at frequency 0): the
conditioning of the preconditioned system is sensitive to it.

:func:`detect_lattice` finds the grid and the offsets of a pattern (or says
it is not a lattice); :class:`TorusPreconditioner` is the preconditioner.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Lattice", "TorusPreconditioner", "detect_lattice"]

#: Patterns with more distinct offsets than this are not treated as lattices
#: (the 13-point stencil has 7 with the diagonal; the symbol blocks grow as b^2).
MAX_OFFSETS = 13


class Lattice:
    """A stencil pattern on an ``r1 x r2`` grid in row-major order.

    Attributes
    ----------
    shape : tuple of int
        ``(r1, r2)``; variable ``i`` sits at row ``i // r2``, column ``i % r2``.
    offsets : ndarray of int64, shape (b, 2)
        The stencil's offsets ``(d_row, d_col)``, the diagonal ``(0, 0)`` first,
        each pair counted once (``d_row > 0``, or ``d_row == 0`` and ``d_col > 0``).
    kind : ndarray of int64, shape (q,)
        The offset of each entry of the pattern.
    site : ndarray of int64, shape (q,)
        The smaller variable of each entry: the entry is ``(site, site + offset)``.
    """

    def __init__(self, shape, offsets, kind, site):
        self.shape, self.offsets, self.kind, self.site = shape, offsets, kind, site

    @property
    def n_offsets(self):
        return len(self.offsets)


def _flat(lattice):
    """The flat index offset ``d_row r2 + d_col`` of each entry's offset."""
    return lattice.offsets[lattice.kind] @ np.array([lattice.shape[1], 1])


def _divisors(p):
    small = [d for d in range(1, int(np.sqrt(p)) + 1) if p % d == 0]
    return sorted(set(small + [p // d for d in small]))


def detect_lattice(rows, cols, p, max_offsets=MAX_OFFSETS):
    """The :class:`Lattice` of a pattern, or None when it is not a full stencil on a grid.

    A pattern is a lattice on an ``r1 x r2`` grid (``r1, r2 >= 3``, variables
    in row-major order) when every entry is a pair of sites at one of a few
    offsets and every pair of sites at those offsets is an entry (the stencil
    cut at the boundary, no wrap-around).

    Parameters
    ----------
    rows, cols : ndarray of int64 of shape (q,)
        The pattern, one triangle, diagonal included.
    p : int
        Number of variables.
    max_offsets : int, default=MAX_OFFSETS
        Largest number of offsets (with the diagonal).

    Returns
    -------
    Lattice or None
    """
    lo, hi = np.minimum(rows, cols), np.maximum(rows, cols)
    if p < 9 or np.count_nonzero(lo == hi) != p:
        return None
    d = hi - lo
    values, counts = np.unique(d, return_counts=True)
    if len(values) > max_offsets:
        return None
    for r2 in _divisors(p):
        r1 = p // r2
        if r1 < 3 or r2 < 3:
            continue
        di = (values + r2 // 2) // r2  # nearest row offset, so that |d_col| <= r2 / 2
        dj = values - di * r2
        if np.any(2 * np.abs(dj) >= r2) or np.any(2 * di >= r1):
            continue
        if not np.array_equal(counts, (r1 - di) * (r2 - np.abs(dj))):
            continue
        kind = np.searchsorted(values, d)
        if not np.array_equal(hi % r2 - lo % r2, dj[kind]):
            continue
        return Lattice((r1, r2), np.stack([di, dj], axis=1).astype(np.int64), kind.astype(np.int64), lo)
    return None


def stencil(lattice, x):
    """The median entry of ``x`` per offset over the interior sites (all sites on small grids)."""
    r1, r2 = lattice.shape
    reach = int(np.max(np.abs(lattice.offsets))) if lattice.n_offsets > 1 else 0
    i, j = np.divmod(lattice.site, r2)
    inner = (i >= reach) & (i < r1 - 2 * reach) & (j >= reach) & (j < r2 - 2 * reach)
    out = np.empty(lattice.n_offsets)
    for k in range(lattice.n_offsets):
        on = lattice.kind == k
        sel = on & inner
        out[k] = np.median(x[sel] if np.any(sel) else x[on])
    return out


def _symbol(offsets, c, w1, w2):
    """``c_0 + 2 sum_k c_k cos(w . o_k)`` on the frequency grid ``(w1, w2)`` (broadcast)."""
    out = np.full(np.broadcast_shapes(np.shape(w1), np.shape(w2)), float(c[0]))
    for (a, b), ck in zip(offsets[1:], c[1:]):
        out += 2.0 * ck * np.cos(a * w1 + b * w2)
    return out


def dirichlet_minimum(lattice, c):
    """Smallest value of the stencil's symbol on the sine frequencies ``pi m / (r + 1)`` of the grid.

    For a 5-point (separable) stencil this is the smallest eigenvalue of the
    stencil matrix with zero boundary conditions; for wider stencils, its
    leading approximation.
    """
    r1, r2 = lattice.shape
    w1 = (np.pi * np.arange(1, r1 + 1) / (r1 + 1))[:, None]
    w2 = (np.pi * np.arange(1, r2 + 1) / (r2 + 1))[None, :]
    return float(_symbol(lattice.offsets, c, w1, w2).min())


class TorusPreconditioner:
    """The inverse Newton operator of a stationary torus model, applied by FFTs.

    Parameters
    ----------
    lattice : Lattice
    x : ndarray of shape (q,)
        The current precision on the pattern (its median stencil is the model).
    floor : float, default=1e-10
        When the target minimum is below ``floor`` times the largest symbol
        value (the median stencil is barely or not positive definite), the
        torus model's minimum is set to that fraction instead.
    minimum : float, optional
        The smallest eigenvalue the torus model should have (for example the
        current precision's own, or that of ``D^{-1} Theta D^{-1}`` with
        ``scale``); default the stencil's Dirichlet minimum.
    scale : ndarray of shape (p,), optional
        Model ``Theta = D C D`` with ``D = diag(scale)`` and ``C`` stationary
        (for example ``scale = sqrt(diag Theta)``, so that ``C`` has a unit
        diagonal): variances that vary over the grid, as near a boundary,
        then do not make the field look non-stationary.
    variance : ndarray of shape (p,), optional
        The diagonal of ``inv(Theta)``. The stencil of ``C`` is still taken
        from ``x`` scaled by ``scale``, but the model becomes ``E C E`` with
        ``E`` chosen so that the model's inverse has this diagonal: a
        Dirichlet field's variance falls towards the boundary, the torus'
        does not, and the mismatch grows with the grid.

    Notes
    -----
    For the torus precision with stencil ``c`` (symbol ``theta(w)``), ``W`` is
    the circulant with kernel ``w = ifft2(1 / theta)``, and the response of
    ``P_V(W U W)`` at the pairs ``(t, t + o_j)`` to a unit ``U`` at the pair
    ``(0, o_k)`` is ``a_jk(t) = w(t) w(t + o_j - o_k) + w(t - o_k) w(t + o_j)``
    (one term for the diagonal ``k = 0``). The operator is the convolution
    ``y_j = sum_k a_jk * x_k``; its inverse is a ``b x b`` solve per frequency.
    Setting up costs ``b^2`` FFTs, applying ``2 b``.
    """

    def __init__(self, lattice, x, floor=1e-10, minimum=None, scale=None, variance=None):
        r1, r2 = lattice.shape
        self.lattice = lattice
        self.scale = None
        if scale is not None:
            # Theta = D C D (D = diag(scale)): the model is C's stencil, and the inverse Newton
            # operator of D C D is r -> D H_C^{-1}(D r D) D, entrywise a factor d_i d_j.
            self.scale = scale[lattice.site] * scale[lattice.site + _flat(lattice)]
            x = x / self.scale
        c = stencil(lattice, x)
        w1 = (2 * np.pi * np.arange(r1) / r1)[:, None]
        w2 = (2 * np.pi * np.arange(r2 // 2 + 1) / r2)[None, :]
        sym = _symbol(lattice.offsets, c, w1, w2)
        target = dirichlet_minimum(lattice, c) if minimum is None else minimum
        target = max(target, floor * float(sym.max()))
        self.shift = target - float(sym.min())
        self.stencil = c + np.r_[self.shift, np.zeros(len(c) - 1)]
        w = np.fft.irfft2(1.0 / (sym + self.shift), s=(r1, r2))
        if variance is not None:
            # Model inv(Theta) = E^-1 inv(C) E^-1 with E chosen so that its diagonal is the given one.
            e = np.sqrt(float(w[0, 0]) / np.asarray(variance, dtype=np.float64))
            self.scale = e[lattice.site] * e[lattice.site + _flat(lattice)]
        self.inverse_blocks = np.linalg.inv(self._blocks(w))

    def _blocks(self, w):
        """``A(w)`` of shape ``(r1, r2 // 2 + 1, b, b)``: the FFTs of the responses ``a_jk``."""
        offs = [tuple(int(v) for v in o) for o in self.lattice.offsets]
        b = len(offs)
        r1, r2 = self.lattice.shape
        out = np.empty((r1, r2 // 2 + 1, b, b), dtype=np.complex128)
        shifted = {}

        def roll(o):  # w(t + o)
            if o not in shifted:
                shifted[o] = np.roll(w, (-o[0], -o[1]), axis=(0, 1))
            return shifted[o]

        for j, oj in enumerate(offs):
            for k, ok in enumerate(offs):
                diff = (oj[0] - ok[0], oj[1] - ok[1])
                a = w * roll(diff)
                if k:
                    a = a + roll((-ok[0], -ok[1])) * roll(oj)
                out[:, :, j, k] = np.fft.rfft2(a)
        return out

    def __call__(self, r):
        """``A^{-1} r`` for a vector on the pattern (the entries of the lower triangle)."""
        lat = self.lattice
        r1, r2 = lat.shape
        b = lat.n_offsets
        if self.scale is not None:
            r = r * self.scale
        grid = np.zeros((b, r1 * r2))
        grid[lat.kind, lat.site] = r
        spectrum = np.fft.rfft2(grid.reshape(b, r1, r2), axes=(1, 2))
        solved = np.einsum("xyjk,kxy->jxy", self.inverse_blocks, spectrum)
        out = np.fft.irfft2(solved, s=(r1, r2), axes=(1, 2)).reshape(b, -1)[lat.kind, lat.site]
        return out if self.scale is None else out * self.scale


def stationary_fit(lattice, s, max_iter=50, tol=1e-10):
    """The stationary stencil of highest likelihood on the torus, from the sample covariance on the pattern.

    A stationary Gaussian on the ``r1 x r2`` torus with stencil ``c`` has
    ``f(c) / N = -mean_w log theta(w) + c_0 sbar_0 + 2 sum_k c_k sbar_k``
    (``N = r1 r2``, ``theta`` the stencil's symbol on the torus frequencies,
    ``sbar_k`` the mean sample covariance at offset ``k``): a convex problem in
    ``b`` unknowns, solved by damped Newton on the exact gradient and Hessian
    (``O(b^2 N)`` per step, no factorisation).

    Parameters
    ----------
    lattice : Lattice
    s : ndarray of shape (q,)
        Sample covariance on the pattern.

    Returns
    -------
    ndarray of shape (b,)
        The stencil, diagonal first.
    """
    r1, r2 = lattice.shape
    b = lattice.n_offsets
    sbar = np.bincount(lattice.kind, weights=s, minlength=b) / np.bincount(lattice.kind, minlength=b)
    w1 = (2 * np.pi * np.arange(r1) / r1)[:, None]
    w2 = (2 * np.pi * np.arange(r2) / r2)[None, :]
    phi = np.stack([np.ones((r1, r2))] + [2.0 * np.cos(a * w1 + d * w2) for a, d in lattice.offsets[1:]]).reshape(b, -1)
    weight = np.r_[1.0, np.full(b - 1, 2.0)]
    c = np.zeros(b)
    c[0] = 1.0 / sbar[0]

    def value(c):
        sym = c @ phi
        return np.inf if sym.min() <= 0 else -float(np.mean(np.log(sym))) + float(weight * sbar @ c)

    f = value(c)
    for _ in range(max_iter):
        inv = 1.0 / (c @ phi)
        grad = weight * sbar - phi @ inv / phi.shape[1]
        hess = (phi * inv**2) @ phi.T / phi.shape[1]
        step = -np.linalg.solve(hess, grad)
        decrement = -float(grad @ step)
        if decrement <= tol:
            break
        t = 1.0
        while value(c + t * step) > f - 0.25 * t * decrement and t > 1e-12:
            t *= 0.5
        c = c + t * step
        f = value(c)
    return c
