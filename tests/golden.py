"""Golden outputs: a fixed list of fits whose results must not change when code moves.

``python -m tests.golden`` (from the repository root) rewrites ``tests/data/golden.npz``;
``tests/test_golden.py`` compares every recorded array against a fresh run. Only public API is
used, so the cases survive any restructuring of the package's internals. Record the file
before a refactoring, never after one.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from skmrf import (
    DiscreteMRF,
    ExactMaxLikelihood,
    GaussianLAP,
    GaussianMaxLikelihood,
    LAPEstimator,
    MCMCMaxLikelihood,
    PseudoLikelihoodEstimator,
    TheorySchedule,
    grid_graph,
)
from skmrf.datasets import make_random_mrf, sample_random_mrf
from skmrf.inference import annealed_importance_sampling

GOLDEN_PATH = Path(__file__).parent / "data" / "golden.npz"

TRIPLES = [(0, 1, 2), (2, 3, 4), (4, 5)]


def _data():
    """The discrete data sets, drawn once with fixed seeds."""
    d = {}
    d["bin_grid"], _ = sample_random_mrf(grid_graph(3, 3), 400, random_state=0)
    d["tri_chain"], _ = sample_random_mrf("chain", 500, n_states=3, n_variables=6, random_state=1)
    d["bin_triples"], _ = sample_random_mrf(TRIPLES, 400, n_states=2, n_variables=6, random_state=2)
    d["mixed_triples"], _ = sample_random_mrf(TRIPLES, 600, n_states=[2, 3, 2, 3, 2, 2], random_state=3)
    d["wide_grid"], _ = sample_random_mrf(grid_graph(6, 6), 300, method="gibbs", random_state=4)
    return d


GRAPHS = {
    "bin_grid": grid_graph(3, 3),
    "tri_chain": "chain",
    "bin_triples": TRIPLES,
    "mixed_triples": TRIPLES,
    "wide_grid": grid_graph(6, 6),
}


def _discrete_cases():
    """``(name, data key, estimator)`` for every discrete estimator and strategy."""
    cases = []
    for key in ["bin_grid", "tri_chain", "bin_triples", "mixed_triples"]:
        g = GRAPHS[key]
        cases.append((f"exact_a0/{key}", key, ExactMaxLikelihood(g, alpha=0.0)))
        cases.append((f"exact_a1e-2/{key}", key, ExactMaxLikelihood(g, alpha=1e-2)))
        cases.append((f"pl_a0/{key}", key, PseudoLikelihoodEstimator(g, alpha=0.0)))
        cases.append((f"pl_a1e-2/{key}", key, PseudoLikelihoodEstimator(g, alpha=1e-2, score_method="pseudo")))
        for strategy in ["pairwise", "dense", "exact"]:
            for rule in ["mean", "first", "own"]:
                cases.append(
                    (
                        f"lap_{strategy}_{rule}/{key}",
                        key,
                        LAPEstimator(g, alpha=1e-4, strategy=strategy, node_rule=rule, read="theta"),
                    )
                )
            # recorded when read="centred" became the default (#39)
            cases.append((f"lap_centred_{strategy}/{key}", key, LAPEstimator(g, alpha=1e-4, strategy=strategy)))
        cases.append((f"lap_a0/{key}", key, LAPEstimator(g, alpha=0.0, strategy="exact", read="theta")))
    g = GRAPHS["bin_grid"]

    def theory(**options):  # Algorithm 1 with an explicit K/M/v
        return TheorySchedule(n_iter=15, n_chains=300, n_sweeps=3, **options)

    unpenalised = dict(alpha=0.0, random_state=0)  # recorded before the default became "auto"
    cases.append(("mcmc_box/bin_grid", "bin_grid", MCMCMaxLikelihood(g, schedule=theory(), **unpenalised)))
    cases.append(
        ("mcmc_box_ridge/bin_grid", "bin_grid", MCMCMaxLikelihood(g, schedule=theory(), alpha=0.1, random_state=0))
    )
    cases.append(
        (
            "mcmc_spectral/bin_grid",
            "bin_grid",
            MCMCMaxLikelihood(g, schedule=theory(), projection="spectral", **unpenalised),
        )
    )
    cases.append(
        (
            "mcmc_pcd_data/bin_grid",
            "bin_grid",
            MCMCMaxLikelihood(g, schedule=theory(persistent=True, init="data"), **unpenalised),
        )
    )
    cases.append(
        (
            "mcmc_last_ais/bin_grid",
            "bin_grid",
            MCMCMaxLikelihood(g, schedule=theory(average=False), score_method="ais", **unpenalised),
        )
    )
    w = GRAPHS["wide_grid"]
    cases.append(
        (
            "lap_ais/wide_grid",
            "wide_grid",
            LAPEstimator(w, alpha=1e-4, score_method="ais", random_state=0, read="theta"),
        )
    )
    cases.append(
        ("pl_ais/wide_grid", "wide_grid", PseudoLikelihoodEstimator(w, alpha=0.0, score_method="ais", random_state=1))
    )
    cases.append(
        ("lap_pseudo/wide_grid", "wide_grid", LAPEstimator(w, alpha=1e-4, score_method="pseudo", read="theta"))
    )
    return cases


def _gaussian_data():
    rng = np.random.default_rng(5)
    small = rng.standard_normal((200, 8)) @ np.triu(np.ones((8, 8))) * 0.3 + rng.standard_normal((200, 8))
    # p = 400 on a 20 x 20 grid: a Gaussian MRF with the grid Laplacian plus a ridge as precision.
    g = grid_graph(20, 20)
    L = sp.csgraph.laplacian(sp.csr_matrix(np.asarray(nxa(g)))) * 0.2 + sp.eye(400)
    C = np.linalg.cholesky(np.linalg.inv(L.toarray()))
    big = rng.standard_normal((1500, 400)) @ C.T + 2.0
    return {"small": small, "p400": big}, {"small": "chain", "p400": g}


def nxa(g):
    import networkx as nx

    return nx.to_numpy_array(g, nodelist=sorted(g.nodes))


def _gaussian_cases():
    cases = []
    for key in ["small", "p400"]:
        cases.append((f"glap/{key}", key, dict(cls=GaussianLAP, params={})))
        cases.append((f"glap_nobias/{key}", key, dict(cls=GaussianLAP, params={"bias_correction": False})))
        cases.append((f"glap_shrink/{key}", key, dict(cls=GaussianLAP, params={"shrinkage": 0.1})))
        cases.append((f"glap_centred/{key}", key, dict(cls=GaussianLAP, params={"assume_centered": True})))
        # decrement_tol=None: the exact optimum (to tol), whose tolerance test_golden derives from tol.
        cases.append((f"gml/{key}", key, dict(cls=GaussianMaxLikelihood, params={"decrement_tol": None})))
        cases.append((f"gml_regression/{key}", key, dict(cls=GaussianMaxLikelihood, params={"solver": "regression"})))
    # Too few samples for a positive-definite LAP estimate: the shrink repair.
    cases.append(("glap_repair/p400_n60", "p400_n60", dict(cls=GaussianLAP, params={"repair": "shrink"})))
    return cases


def compute(with_fits=False):
    """Run every case; return ``{key: array}`` (and ``{case name: (estimator, X)}`` with ``with_fits``)."""
    out, fits = {}, {}
    data = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, key, est in _discrete_cases():
            X = data[key]
            est.fit(X)
            fits[name] = (est, X)
            out[f"{name}/theta"] = np.asarray(est.theta_)
            out[f"{name}/score"] = np.array(est.score(X))
            out[f"{name}/score_samples"] = est.score_samples(X[:7])
            lp = getattr(est, "log_partition_", None)
            out[f"{name}/log_partition"] = np.array(np.nan if lp is None else lp)
            out[f"{name}/log_partition_std"] = np.array(getattr(est, "log_partition_std_", np.nan))
            out[f"{name}/n_iter"] = np.array(getattr(est, "n_iter_", -1))
            if isinstance(est, LAPEstimator):
                out[f"{name}/sub_iter"] = np.array([s.n_iter for s in est.subproblems_])
            out[f"{name}/sample"] = est.sample(20, random_state=0)
        # Samplers and AIS directly on 3-state and triple-clique models.
        m3 = make_random_mrf(TRIPLES, [2, 3, 2, 3, 2, 2], scale=1.0, random_state=6)
        out["model3/gibbs"] = m3.sample(50, random_state=0, method="gibbs", n_sweeps=20)
        out["model3/exact"] = m3.sample(50, random_state=0, method="exact")
        out["model3/log_partition"] = np.array(m3.log_partition())
        out["model3/pll"] = m3.log_pseudo_likelihood(out["model3/exact"])
        marg = m3.marginals()
        out["model3/marginals"] = np.concatenate([marg[c].ravel() for c in m3.cliques])
        res = annealed_importance_sampling(m3, n_chains=40, n_steps=60, random_state=0)
        out["model3/ais_log_weights"] = res.log_weights
        mb = make_random_mrf(grid_graph(5, 5), 2, scale=0.5, random_state=7)
        out["model_bin/gibbs"] = mb.sample(50, random_state=0, method="gibbs", n_sweeps=20)
        res = annealed_importance_sampling(mb, n_chains=40, n_steps=60, random_state=0)
        out["model_bin/ais_log_weights"] = res.log_weights
        out["model_bin/suff_stats"] = mb.sufficient_statistics(out["model_bin/gibbs"])
        m0 = DiscreteMRF([(0, 1, 2)], [3, 2, 4], theta=np.linspace(-1, 1, 1 + 2 + 3 + 2 + 3 + 6 + 6))
        out["triple/log_prob"] = m0.log_prob(m0.sample(30, random_state=1, method="exact"))

        gdata, ggraphs = _gaussian_data()
        gdata["p400_n60"] = gdata["p400"][:60]
        ggraphs["p400_n60"] = ggraphs["p400"]
        for name, key, spec in _gaussian_cases():
            X = gdata[key]
            est = spec["cls"](ggraphs[key], **spec["params"]).fit(X)
            fits[name] = (est, X)
            P = est.precision_
            P = P.toarray() if sp.issparse(P) else np.asarray(P)
            out[f"{name}/precision"] = P
            if est.is_positive_definite_:
                out[f"{name}/score"] = np.array(est.score(X))
                out[f"{name}/score_samples"] = est.score_samples(X[:7])
            out[f"{name}/n_iter"] = np.array(getattr(est, "n_iter_", -1))
    return (out, fits) if with_fits else out


if __name__ == "__main__":
    result = compute()
    GOLDEN_PATH.parent.mkdir(exist_ok=True)
    np.savez_compressed(GOLDEN_PATH, **result)
    print(f"wrote {len(result)} arrays to {GOLDEN_PATH}")
