"""Exact inference on J x J binary grids: skmrf's junction tree versus peers.

Times ``log Z`` plus every node and edge marginal, on the same random model
(parameters uniform on [-1, 1]) for each J, and prints skmrf's time divided by
each peer's (below 1 means skmrf is faster). Peers are optional and skipped
with a message when absent: pyAgrum (``ShaferShenoyMRFInference``, C++),
pyGMs (``JTree``) and pgmpy (``BeliefPropagation``, given a row-major
elimination order because its default order runs out of memory at J = 10).
Each peer's log Z (where it returns one) is checked against skmrf's.

Usage: python benchmarks/exact_inference.py [--sizes 4 6 ... 16] [--peer-budget 60] [--quick]

``--quick``: J = 4, 6, 8, one skmrf run each, peers stopped past 2 s.
"""

import argparse
import functools
import time
import tracemalloc
import warnings

import numpy as np
from _harness import header

from skmrf import grid_graph
from skmrf.datasets import make_random_mrf


def grid_model(J, seed=0):
    return make_random_mrf(grid_graph(J, J), 2, scale=1.0, random_state=seed)


def potentials(model):
    """Linear-space tables exp(full table) per clique, with the clique's variables."""
    lay = model.layout
    full = lay.full_tables(model.theta)
    for k, c in enumerate(model.cliques):
        yield c, np.exp(full[lay.table_offsets[k] : lay.table_offsets[k + 1]].reshape(lay.table_shapes[k]))


def run_skmrf(model):
    """Time (untraced) and then peak traced memory of tree + calibration + marginals."""
    t = time.perf_counter()
    jt = model.junction_tree  # structure (elimination order, tree) included in the time
    cal = model.calibrate()
    cal.clique_marginals()
    elapsed = time.perf_counter() - t
    model.__dict__.pop("_junction_tree", None)
    tracemalloc.start()
    model.calibrate().clique_marginals()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return elapsed, cal.log_z, peak, jt.treewidth


def run_pyagrum(model):
    import pyagrum as gum

    J2 = model.n_variables
    mrf = gum.MarkovRandomField()
    for i in range(J2):
        mrf.add(gum.LabelizedVariable(f"x{i}", f"x{i}", 2))
    for c, table in potentials(model):
        if len(c) == 2:
            mrf.addFactor([f"x{i}" for i in c]).fillWith(table.ravel().tolist())
    # pyAgrum keeps one factor per edge; fold node potentials into an edge of each node.
    for c, table in potentials(model):
        if len(c) == 1:
            i = c[0]
            e = next(e for e in model.graph.edges if i in e)
            f = mrf.factor([f"x{v}" for v in e])
            arr = f.toarray()
            arr = arr * (table[:, None] if e[0] == i else table[None, :])
            f.fillWith(arr.ravel().tolist())
    t = time.perf_counter()
    ie = gum.ShaferShenoyMRFInference(mrf)
    ie.makeInference()
    for i in range(J2):
        ie.posterior(f"x{i}")
    for i, j in model.graph.edges:
        ie.jointPosterior({f"x{i}", f"x{j}"})
    return time.perf_counter() - t, None


def run_pygms(model):
    import pygms as gm
    from pygms.wmb import JTree

    V = [gm.Var(i, 2) for i in range(model.n_variables)]
    fs = [gm.Factor([V[i] for i in c], table) for c, table in potentials(model)]
    gmodel = gm.GraphModel(fs)
    t = time.perf_counter()
    order, _ = gm.eliminationOrder(gmodel, orderMethod="minfill")
    jt = JTree(gmodel, order)
    lnz = jt.msgForward()
    jt.beliefs([f.vars for f in fs])
    return time.perf_counter() - t, float(lnz)


def run_pgmpy(model):
    import logging

    logging.getLogger("pgmpy").setLevel(logging.ERROR)
    from pgmpy.factors.discrete import DiscreteFactor
    from pgmpy.inference import BeliefPropagation
    from pgmpy.models import DiscreteMarkovNetwork as MarkovNetwork

    names = [f"x{i}" for i in range(model.n_variables)]
    net = MarkovNetwork([(names[i], names[j]) for i, j in model.graph.edges])
    net.add_nodes_from(names)
    for c, table in potentials(model):
        net.add_factors(DiscreteFactor([names[i] for i in c], [2] * len(c), table.ravel()))
    # Row-major elimination order (the default heuristic runs out of memory at J = 10).
    net.triangulate = functools.partial(MarkovNetwork.triangulate, net, order=names)
    t = time.perf_counter()
    bp = BeliefPropagation(net)
    bp.calibrate()
    beliefs = bp.get_clique_beliefs()
    lnz = float(np.log(next(iter(beliefs.values())).values.sum()))
    return time.perf_counter() - t, lnz


PEERS = {"pyAgrum": run_pyagrum, "pyGMs": run_pygms, "pgmpy": run_pgmpy}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(range(4, 17, 2)))
    parser.add_argument("--peer-budget", type=float, default=60.0, help="skip larger J for a peer past this many s")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many skmrf runs")
    parser.add_argument("--quick", action="store_true", help="J = 4, 6, 8, one run, peer budget 2 s")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.repeat, args.peer_budget = [4, 6, 8], 1, 2.0

    warnings.filterwarnings("ignore", category=FutureWarning)
    available = {}
    for name, fn in PEERS.items():
        mod = {"pyAgrum": "pyagrum", "pyGMs": "pygms", "pgmpy": "pgmpy"}[name]
        try:
            __import__(mod)
            available[name] = fn
        except ImportError:
            print(f"[skip] {name} is not installed (pip install {mod})")
    over_budget = set()

    head = f"{'J':>3} {'tw':>3} {'skmrf s':>9} {'peak MiB':>9}"
    for name in available:
        head += f" {name + ' s':>11} {'ratio':>7}"
    print(header(f"exact_inference.py: log Z + all marginals on J x J grids, skmrf best of {args.repeat}"))
    print(head)
    print("-" * len(head))
    for J in args.sizes:
        model = grid_model(J)
        best = None
        for _ in range(args.repeat):
            model = grid_model(J)  # fresh model: the junction tree is rebuilt and timed
            res = run_skmrf(model)
            best = res if best is None or res[0] < best[0] else best
        t_ours, lnz, peak, tw = best
        line = f"{J:>3} {tw:>3} {t_ours:>9.4f} {peak / 2**20:>9.1f}"
        for name, fn in available.items():
            if name in over_budget:
                line += f" {'skipped':>11} {'':>7}"
                continue
            try:
                t_peer, lnz_peer = fn(model)
            except MemoryError:
                over_budget.add(name)
                line += f" {'no memory':>11} {'':>7}"
                continue
            except Exception as exc:  # a peer's API change must not stop the others
                print(f"[skip] {name} failed at J={J}: {type(exc).__name__}: {exc}")
                over_budget.add(name)
                line += f" {'failed':>11} {'':>7}"
                continue
            if lnz_peer is not None and abs(lnz_peer - lnz) > 1e-6 * abs(lnz):
                line += f" {'WRONG logZ':>11}"
            line += f" {t_peer:>11.4f} {t_ours / t_peer:>7.3f}"
            if t_peer > args.peer_budget:
                over_budget.add(name)
        print(line, flush=True)
    print("\nratio = skmrf time / peer time (below 1: skmrf faster). 'skipped': the peer's previous")
    print(f"size exceeded the {args.peer_budget:g} s budget. Times: log Z + all node and edge marginals,")
    print("junction-tree construction included for every library.")


if __name__ == "__main__":
    main()
