"""Chunk sizes, memory budgets and the work below which a parallel loop runs serially.

One place for every such constant (#25). The modules that use one import it under the name
they always had (so ``skmrf._kernels.pseudo.PL_MIN_WORK_PER_WORKER`` still exists, and the
tests can set a module's serial-fallback threshold to 0). Each value is a measured trade-off,
explained beside it; none changes a result, only how the work is cut up.
"""

# -- Row chunks of data ------------------------------------------------------------------------

# Used by skmrf/_data/chunks.py.
#: Bytes of one chunk of rows read from a memmap.
CHUNK_BYTES = 1 << 28

# Used by skmrf/_data/joint_states.py.
# Rows x subsets gathered at once while counting.
COUNT_CHUNK = 1 << 24

# Used by skmrf/_parametrisation.py.
#: Rows x clique-columns per chunk when coding data (bounds temporary memory to about
#: ``8 * CHUNK_ENTRIES`` bytes per array).
LAYOUT_CHUNK_ENTRIES = 1 << 22

# Used by skmrf/_kernels/incomplete/cost.py.
#: Floats (pattern x table entries) per batched calibration: one task of the E-step.
EM_CHUNK_FLOATS = 1 << 20

# Used by skmrf/protein/_scores.py.
#: Entries of the full coupling tables handled at once (a chunk of edges): about eight float64
#: temporaries of this size, 16 MiB each.
SCORE_CHUNK_ENTRIES = 1 << 21

# Used by skmrf/_kernels/gaussian/lap.py.
#: Entries (float64) of the Gram buffer, of the gathered blocks and of the
#: gathered data in one work chunk of the LAP kernel (each about 32 MB).
GLAP_CHUNK_ENTRIES = 1 << 22

# -- Batches of subproblems, chains and steps --------------------------------------------------

# Used by skmrf/_solvers/newton.py.
#: Floats of the largest temporary (problems x configurations x parameters) of one batch.
BATCH_FLOATS = 1 << 23

# Used by skmrf/_kernels/coin_tossing.py.
#: Edges per block when building the tables (bounds the temporaries to ~100 MB).
EDGE_BLOCK = 64

# Used by skmrf/_kernels/mcmc/chains.py.
#: Chains per Gibbs block. Blocks are the unit of parallel work and each has
#: its own random stream, drawn up front, so results do not depend on n_jobs.
CHAIN_BLOCK = 4096

# Used by skmrf/_kernels/metropolis.py.
#: MH steps whose proposal noise is drawn at once, per chain.
STEP_BLOCK = 1024

# Used by skmrf/_kernels/metropolis.py.
#: Rows of one likelihood call over all chains, at most, in the speculative runner (its window
#: of steps ahead shrinks with many chains).
MAX_BATCH = 4096

# Used by skmrf/_kernels/pseudo_dense.py.
#: Bytes of the temporaries of one block of columns per row chunk (the one-hot chunk and the
#: float64 logits, probabilities and residuals of the block's columns).
DENSE_CHUNK_BYTES = 1 << 26

# Used by skmrf/_kernels/pseudo_dense.py.
#: Entries of the gradient gathered from the one-hot coordinates at a time.
SCATTER_ENTRIES = 1 << 20

# Used by skmrf/_kernels/pseudo_dense.py.
#: Bytes of one block of columns' float64 gradient rows ``(block width, D)``: the columns are taken
#: in blocks of at most this (serially, or ``n_jobs`` at a time), not the whole ``D x D`` at once.
DENSE_BLOCK_BYTES = 1 << 26

# Used by skmrf/inference/_queries.py.
#: Conditional queries enumerate the joint states of a component of a row's missing entries when
#: there are at most this many (else a junction tree over its variables). Measured on 1000 rows of
#: random 10x10 and 16x16 grids (2 states, 40-60 % hidden; 3 states, 40-50 %), thresholds 2^2 to
#: 2^16: 2^12 was fastest on 7 of 8 workloads and within 2.3 % of the fastest on all (geometric
#: mean 1.003 of the best; 2^10: 1.085, 2^14: 1.059, 2^16: 1.548 and up to 5.5 GB of peak memory);
#: ``python benchmarks/queries.py crossover``, ``benchmarks/results/queries_crossover.txt``.
ENUMERATE_MAX_STATES = 1 << 12

# Used by skmrf/inference/_queries.py.
#: Floats of one batch of a conditional query: (component x joint state) rows times the cliques
#: gathered for each, or patterns times a tree's tables (about 8 bytes each, a few arrays).
QUERY_CHUNK_FLOATS = 1 << 22

# Used by skmrf/model/_queries.py.
#: Memory budget of one junction-tree calibration of one component of a conditional query when
#: the caller gives none: a larger component is estimated by clamped Gibbs chains (with a
#: warning) rather than calibrated for seconds per row. CPU time of one exact query of a
#: component of n binary variables that all share cliques (a complete graph): n = 16: 2 MiB,
#: 0.04 s; n = 18: 8 MiB, 0.16 s; n = 20: 32 MiB, 0.72 s (its Gibbs estimate: about 0.1 s).
QUERY_MAX_BYTES = 16 * 1024**2

# Used by skmrf/model/_queries.py.
#: Conditional marginals estimated by clamped Gibbs chains warn, beyond naming the approximation,
#: when the largest Monte-Carlo standard error exceeds this: a probability read to two decimals.
#: At the defaults (20 chains, 400 sweeps) on random binary grids, 70-80 % of entries hidden,
#: 20 rows, the largest error was 0.0019 / 0.0038 / 0.0082 at parameter scales 0.5 / 1 / 2 (6 x 6)
#: and 0.0035 at scale 1 (10 x 10); the actual largest errors against the exact values 0.0028 /
#: 0.0065 / 0.0103 / 0.0076. So it warns when chains are too few or mix too slowly.
QUERY_SE_WARN = 0.01

# -- Memory budgets ----------------------------------------------------------------------------

# Used by skmrf/inference/_junction_tree.py.
#: Default memory budget for the junction-tree tables (bytes).
DEFAULT_MAX_BYTES = 2 * 1024**3

# Used by skmrf/_kernels/lap.py.
#: Empirical frequencies (float64 entries, problems x joint states) counted and held at once:
#: 256 MiB. The auxiliary problems are counted, solved and read off in passes of this size.
PASS_ENTRIES = 1 << 25

# Used by skmrf/_kernels/lap_structure.py.
#: Largest number of float64 entries of one auxiliary structure's enumerated features
#: (joint states x parameters) plus its Newton Hessian (parameters squared): 256 MiB each.
#: ``fit`` refuses a larger structure before building it.
MAX_FEATURE_ENTRIES = 1 << 25

# Used by skmrf/_kernels/pseudo.py.
#: ... fewer (down to 2) when their 8 bytes per parameter per pair would exceed this: 5 pairs up
#: to 2.7e7 parameters (L = 370 columns at q = 21), 2 at L = 500.
DENSE_LBFGS_BYTES = 1 << 30

# Used by skmrf/_kernels/mcmc/defaults.py.
#: Beyond this many bytes of chain states (8 per variable and chain) the averaging grows instead.
ADAPTIVE_MAX_STATE_BYTES = 1 << 28

# Used by skmrf/inference/_gibbs_dense.py.
#: The dense path keeps one float32 coupling table of ``(n * K_max)^2`` entries (10 MB at
#: ``n = 75, K_max = 21``, 71 MB at ``n = 200``); above this the sparse tables are used.
DENSE_MAX_TABLE_BYTES = 1 << 30

# -- Work below which a parallel loop runs serially --------------------------------------------

# Used by skmrf/_kernels/pseudo.py.
#: Work (:attr:`PseudoLikelihoodObjective.work` of one evaluation) each thread needs before a
#: fit runs its objective in parallel. Measured (benchmarks/results/parallel_threshold.txt):
#: t(2 jobs) / t(1 job) was 34 at 1e3 units, 3.3 at 7e4, 1.0 at 1.7e5, 0.91 at 7.6e5; the
#: per-evaluation dispatch is paid hundreds of times per fit, so two threads start at 8e5.
PL_MIN_WORK_PER_WORKER = 4e5

# Used by skmrf/_kernels/pseudo.py.
#: Entries of the sparse one-hot products per thread (:attr:`DensePseudoLikelihood.work`) before
#: the one-hot path runs its blocks of columns in parallel: 2 ms of work at the 1.5e-10 s per
#: entry of ONE_HOT_SECONDS (the records path broke even at about 2 ms of work per evaluation,
#: PL_MIN_WORK_PER_WORKER's table; this path's break-even is not measured separately).
DENSE_MIN_WORK_PER_WORKER = 1.4e7

# Used by skmrf/_kernels/lap.py.
#: Work (:func:`_solve_work` of all the auxiliary problems) each thread needs before the
#: problems are solved in parallel. Measured (benchmarks/results/parallel_threshold.txt):
#: t(2 jobs) / t(1 job) was 1.7 at 1.5e4, 1.04 at 3e6, 0.69 at 7.5e6, 0.68 at 1.5e8, so two
#: threads start at 4e6.
LAP_MIN_WORK_PER_WORKER = 2e6

# Used by skmrf/_kernels/mcmc/chains.py.
#: Work of one step (single-site Gibbs updates: chains x sweeps x variables) each worker
#: needs before the chain blocks run in parallel (loky processes). Measured
#: (benchmarks/results/parallel_threshold.txt): t(2 jobs) / t(1 job) was 15 at 1.8e3, 2.0 at
#: 4.1e6, 0.87 at 2.1e7, 0.68 at 8.4e7, so two workers start at 1.6e7.
MCMC_MIN_WORK_PER_WORKER = 8e6

# Used by skmrf/_kernels/mcmc/moments.py.
#: Chains per block of the moment-matching fit, whose blocks run in threads: below CHAIN_BLOCK so
#: that its default 4000 chains are 4 tasks. The dense Gibbs kernel releases the GIL in its sparse
#: product and array operations: two threads ran two blocks of 2000 chains (n = 75, K = 21, 10
#: sweeps) 2.03x faster than one.
MOMENTS_CHAIN_BLOCK = 1024

# Used by skmrf/estimators/_mcmc.py.
#: Work of one step (chains x sweeps x variables) each thread of the moment-matching fit needs
#: before its chain blocks run in threads (no pickling: a task costs well under a millisecond).
#: Measured only above it: a step of 4000 chains x 5 sweeps x 75 variables (1.5e6) ran 1.53x
#: faster in wall time on two threads (the per-step work outside the chains is serial); 1e5 is
#: a guess at where a thread's start-up stops paying, not a measurement.
MOMENTS_MIN_WORK_PER_THREAD = 1e5

# Used by skmrf/_kernels/incomplete/em.py.
#: Work (:attr:`IncompleteDataTerm.work`, floats of one E-step's calibrations) each thread
#: needs before the E-step runs in parallel. Measured (benchmarks/results/parallel_threshold.txt):
#: t(2 jobs) / t(1 job) was 1.34 at 7e4, 1.16 at 7.8e5, 0.66 at 7.7e6, 0.55 at 7.3e7, so two
#: threads start at 2e6.
EM_MIN_WORK_PER_WORKER = 1e6

# Used by skmrf/_kernels/gaussian/lap.py.
#: Work (:meth:`LapPlan.cost`) each thread needs before the chunks of the plan are solved
#: in parallel. Measured (benchmarks/results/parallel_threshold.txt): t(2 jobs) / t(1 job)
#: was 4.7 at 3e4, 1.24 at 8.4e7, 0.97 at 2.2e8, 0.90 at 5.4e8, so two threads start at 3e8.
GLAP_MIN_WORK_PER_WORKER = 1.5e8

# Used by skmrf/_kernels/gaussian/sparse_ml.py.
#: Above this many variables, GaussianMaxLikelihood on a lattice stencil wider than nearest
#: neighbours warns before its Newton steps what they may cost (a CostWarning). Measured on the
#: 13-point pattern of L L^T, n = 1000 (benchmarks/results/gaussian_wide_stencil.txt).
WIDE_STENCIL_WARN_P = 2500
