"""skmrf.protein: the alignment reader, sequence weights, the zero-sum gauge, APC scores, score files."""

import gzip
import io
import warnings

import numpy as np
import pytest

from skmrf import PseudoLikelihoodEstimator
from skmrf.exceptions import SamplingWarning
from skmrf.model import DiscreteMRF
from skmrf.protein import (
    ALPHABET,
    PYDCA_ALPHABET,
    average_product_correction,
    coupling_scores,
    load_synthetic_alignment,
    make_contact_potts,
    make_synthetic_alignment,
    read_alignment,
    read_ccmpred_matrix,
    read_plmc_couplings,
    sequence_weights,
    write_ccmpred_matrix,
    write_fasta,
    write_plmc_couplings,
    zero_sum_gauge,
)
from skmrf.protein._synthetic import BUNDLED

from .brute_force import energies, states

# Every tolerance below of the form 1e-12 covers float64 rounding of sums of at most a few
# hundred terms of size O(10): a few hundred ulps of 10 is about 1e-12.
ROUND = 1e-12


def _codes(text, alphabet=ALPHABET):
    return [alphabet.index(c) for c in text]


# -- reading alignments ------------------------------------------------------------------------


def test_fasta_reads_every_column_case_blind_with_gaps_and_multiline_records():
    text = ">s1 first sequence\nACDEF\nGH\n\n>s2\nac.e~\n-h\n"
    X, names, alphabet = read_alignment(io.StringIO(text), format="fasta")
    assert names == ["s1 first sequence", "s2"]
    assert alphabet == ALPHABET
    np.testing.assert_array_equal(X, [_codes("ACDEFGH"), _codes("AC-E--H")])
    assert X.dtype == np.int64


def test_a2m_drops_insertions_lowercase_and_dots():
    text = ">q\nAC..DE\n>h1\nAcgC-E\n>h2\n-Cy.DEk\n"
    X, names, _ = read_alignment(io.StringIO(text), format="a2m")
    np.testing.assert_array_equal(X, [_codes("ACDE"), _codes("AC-E"), _codes("-CDE")])


def test_a3m_has_unpadded_insertions_and_a_hash_header():
    text = "#A3M from a search\n>q\nMKVL\n>h1\nMkkKVL\n>h2\n-KaaaVL\n"
    X, _, _ = read_alignment(io.StringIO(text), format="a3m")
    np.testing.assert_array_equal(X, [_codes("MKVL"), _codes("MKVL"), _codes("-KVL")])


def test_nonstandard_letters_become_gaps_or_drop_the_sequence():
    text = ">a\nABXZ\n>b\nACDE\n>c\nUOJC\n"
    X, names, _ = read_alignment(io.StringIO(text), format="fasta")
    np.testing.assert_array_equal(X, [_codes("A---"), _codes("ACDE"), _codes("---C")])
    X, names, _ = read_alignment(io.StringIO(text), format="fasta", nonstandard="drop")
    np.testing.assert_array_equal(X, [_codes("ACDE")])
    assert names == ["b"]


def test_pydca_alphabet_puts_the_gap_last():
    X, _, alphabet = read_alignment(io.StringIO(">a\nA-Y\n"), alphabet=PYDCA_ALPHABET)
    np.testing.assert_array_equal(X, [[0, 20, 19]])
    assert alphabet == PYDCA_ALPHABET


def test_unequal_match_lengths_are_refused_naming_the_sequence():
    with pytest.raises(ValueError, match=r"Sequence 2 \('third'\) has 3 match columns.*'first'.*has 4"):
        read_alignment(io.StringIO(">first\nACDE\n>second\nAcCDE\n>third\nACD\n"), format="a2m")
    with pytest.raises(ValueError, match=r"Sequence 1 \('b'\) has 5 columns"):
        read_alignment(io.StringIO(">a\nACDE\n>b\nAcCDE\n"), format="fasta")
    with pytest.raises(ValueError, match=r"Sequence 1 \('empty'\) has 0 columns"):
        read_alignment(io.StringIO(">a\nACDE\n>empty\n>c\nACDE\n"), format="fasta")


def test_bad_characters_and_empty_files_are_refused():
    with pytest.raises(ValueError, match=r"Sequence 1 \('b'\) holds the character '\*' at position 3"):
        read_alignment(io.StringIO(">a\nACDE\n>b\nACD*\n"), format="fasta")
    with pytest.raises(ValueError, match="no sequence"):
        read_alignment(io.StringIO(""))
    with pytest.raises(ValueError, match="before the first '>'"):
        read_alignment(io.StringIO("ACDE\n>a\nACDE\n"))
    with pytest.raises(ValueError, match="no match column"):
        read_alignment(io.StringIO(">a\nacde\n>b\nacde\n"), format="a2m")
    with pytest.raises(ValueError, match="alphabet"):
        read_alignment(io.StringIO(">a\nA\n"), alphabet="ACD")
    with pytest.raises(ValueError, match="format"):
        read_alignment(io.StringIO(">a\nA\n"), format="stockholm")


def test_auto_format_by_extension_gzip_and_content(tmp_path):
    text = ">a\nAcD\n>b\nAD\n"
    (tmp_path / "x.a2m").write_text(text)
    assert read_alignment(tmp_path / "x.a2m").X.shape == (2, 2)
    with gzip.open(tmp_path / "x.a3m.gz", "wt") as fh:
        fh.write(text)
    assert read_alignment(str(tmp_path / "x.a3m.gz")).X.shape == (2, 2)
    (tmp_path / "x.fasta").write_text(text)
    with pytest.raises(ValueError, match="not aligned"):  # a .fasta file reads lower case as columns
        read_alignment(tmp_path / "x.fasta")
    assert read_alignment(io.StringIO(text)).X.shape == (2, 2)  # no name: the insert means A2M
    assert read_alignment(io.BytesIO(b">a\nAC\n>b\nAD\n")).X.shape == (2, 2)


def test_write_fasta_round_trips_through_the_reader():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 21, size=(7, 9))
    out = io.StringIO()
    write_fasta(out, X)
    out.seek(0)
    np.testing.assert_array_equal(read_alignment(out, format="fasta").X, X)


# -- sequence weights --------------------------------------------------------------------------


def _weights_loop(X, identity):
    n, L = X.shape
    w = np.zeros(n)
    for a in range(n):
        w[a] = 1.0 / sum((X[a] == X[b]).sum() >= identity * L for b in range(n))
    return w


@pytest.mark.parametrize("identity", [0.0, 0.5, 0.8, 1.0])
def test_sequence_weights_equal_the_direct_loop(identity):
    rng = np.random.default_rng(1)
    base = rng.integers(0, 4, size=(6, 10))
    # Near-copies of a few sequences, so that every threshold has neighbours to count.
    X = base[rng.integers(0, 6, size=90)]
    flip = rng.random(X.shape) < 0.15
    X = np.where(flip, rng.integers(0, 4, size=X.shape), X)
    expected = _weights_loop(X, identity)
    # Tiny blocks (3 rows) exercise the off-diagonal blocks and their transposed counts.
    for block_bytes in [4 * 10 * 4 * 3, 1 << 25]:
        np.testing.assert_array_equal(sequence_weights(X, identity, block_bytes=block_bytes), expected)


def test_sequence_weights_threshold_is_inclusive_as_in_plmc():
    # 4 of 5 positions identical: a neighbour at identity 0.8 (plmc: id >= (1 - theta) L).
    X = np.array([[1, 2, 3, 4, 5], [1, 2, 3, 4, 0]])
    np.testing.assert_array_equal(sequence_weights(X, 0.8), [0.5, 0.5])
    np.testing.assert_array_equal(sequence_weights(X, 0.81), [1.0, 1.0])


def test_sequence_weights_refuse_bad_input_and_leave_x_alone():
    X = np.array([[1, 2], [1, 2]])
    before = X.copy()
    sequence_weights(X)
    np.testing.assert_array_equal(X, before)
    with pytest.raises(ValueError, match="identity"):
        sequence_weights(X, 1.5)
    with pytest.raises(ValueError, match="integer states"):
        sequence_weights(X.astype(float))
    with pytest.raises(ValueError, match="negative"):
        sequence_weights(-X)


# -- zero-sum gauge ----------------------------------------------------------------------------


def _random_model(n_states, graph="complete", n_variables=None, seed=0):
    n_variables = len(n_states) if n_variables is None else n_variables
    model = DiscreteMRF(graph, n_states, n_variables=n_variables)
    model.theta = np.random.default_rng(seed).normal(size=model.n_params)
    return model


@pytest.mark.parametrize(
    "n_states,graph",
    [
        ([3, 3, 3], "complete"),
        ([4, 4, 4, 4], "complete"),
        ([3, 4, 2, 3], "complete"),  # unequal state counts: padded entries stay out of the sums
        ([3, 3, 3, 3], [(0, 1), (1, 2), (0, 3)]),
    ],
)
def test_zero_sum_gauge_keeps_every_log_probability(n_states, graph):
    model = _random_model(n_states, graph)
    p = zero_sum_gauge(model)
    xs = states(model.n_states)
    gauge_energy = p.fields[np.arange(len(n_states)), xs].sum(axis=1)
    gauge_energy += p.couplings[np.arange(len(p.edges)), xs[:, p.edges[:, 0]], xs[:, p.edges[:, 1]]].sum(axis=1)
    diff = gauge_energy - energies(model, xs)  # the brute force reads the blocks state by state
    assert np.ptp(diff) < ROUND  # equal up to one constant: every log-probability is unchanged
    K = np.asarray(n_states)
    for e, (i, j) in enumerate(p.edges):
        block = p.couplings[e, : K[i], : K[j]]
        np.testing.assert_allclose(block.sum(axis=0), 0.0, atol=ROUND)
        np.testing.assert_allclose(block.sum(axis=1), 0.0, atol=ROUND)
        assert not p.couplings[e, K[i] :].any() and not p.couplings[e, :, K[j] :].any()
    np.testing.assert_allclose(p.fields.sum(axis=1), 0.0, atol=ROUND)
    for i, k in enumerate(K):
        assert not p.fields[i, k:].any()


def test_zero_sum_gauge_is_the_smallest_coupling_norm():
    # Any other gauge J + u(b) + v(a) has a larger Frobenius norm (the double-centring is the
    # orthogonal projection onto the blocks whose rows and columns sum to zero).
    model = _random_model([4, 4])
    J = zero_sum_gauge(model).couplings[0]
    rng = np.random.default_rng(3)
    for _ in range(20):
        other = J + rng.normal(size=(1, 4)) + rng.normal(size=(4, 1))
        assert np.linalg.norm(other) > np.linalg.norm(J)


def test_gauge_and_scores_accept_fitted_estimators_and_refuse_other_models():
    X = np.random.default_rng(0).integers(0, 3, size=(40, 3))
    est = PseudoLikelihoodEstimator(graph="complete", n_states=3, alpha=0.1, score_method="pseudo").fit(X)
    np.testing.assert_array_equal(zero_sum_gauge(est).couplings, zero_sum_gauge(est.model_).couplings)
    with pytest.raises(ValueError, match="not fitted"):
        coupling_scores(PseudoLikelihoodEstimator())
    with pytest.raises(ValueError, match="DiscreteMRF"):
        zero_sum_gauge(np.zeros(3))
    with pytest.raises(ValueError, match="pairwise"):
        zero_sum_gauge(DiscreteMRF([(0, 1, 2)], 2, n_variables=3))


# -- coupling scores and APC -------------------------------------------------------------------


def _apc_numpy(S):
    n = len(S)
    off = ~np.eye(n, dtype=bool)
    row = np.array([S[i][off[i]].mean() for i in range(n)])
    total = S[np.triu_indices(n, 1)].mean()
    out = S - np.outer(row, row) / total
    out[~off] = 0
    return out


def test_apc_equals_a_direct_numpy_computation():
    rng = np.random.default_rng(4)
    A = rng.random((7, 7))
    S = A + A.T
    np.fill_diagonal(S, 5.0)  # the diagonal is ignored
    np.testing.assert_allclose(average_product_correction(S), _apc_numpy(np.where(np.eye(7) > 0, 0, S)), atol=ROUND)
    np.testing.assert_array_equal(average_product_correction(np.zeros((3, 3))), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="square"):
        average_product_correction(np.zeros((2, 3)))


def test_coupling_scores_are_frobenius_norms_of_the_gauge_blocks_with_apc():
    model = _random_model([4, 4, 4, 4, 4])
    p = zero_sum_gauge(model)
    norms = np.zeros((5, 5))
    no_gap = np.zeros((5, 5))
    for e, (i, j) in enumerate(p.edges):
        norms[i, j] = norms[j, i] = np.linalg.norm(p.couplings[e])
        no_gap[i, j] = no_gap[j, i] = np.linalg.norm(p.couplings[e][1:, 1:])
    np.testing.assert_allclose(coupling_scores(model, apc=False).matrix, norms, atol=ROUND)
    np.testing.assert_allclose(coupling_scores(model).matrix, _apc_numpy(norms), atol=ROUND)
    np.testing.assert_allclose(coupling_scores(model, apc=False, exclude_state=0).matrix, no_gap, atol=ROUND)
    own = np.zeros((5, 5))
    for i, j in p.edges:
        own[i, j] = own[j, i] = np.linalg.norm(model.potential((i, j)))
    np.testing.assert_allclose(coupling_scores(model, gauge="model", apc=False).matrix, own, atol=ROUND)


def test_ranked_pairs_are_sorted_and_filtered_by_separation():
    model = _random_model([3] * 8, seed=5)
    s = coupling_scores(model, min_separation=3)
    assert np.all(s.pairs["j"] - s.pairs["i"] >= 3)
    assert len(s.pairs) == sum(1 for i in range(8) for j in range(i + 3, 8))
    assert np.all(np.diff(s.pairs["score"]) <= 0)
    np.testing.assert_array_equal(s.pairs["score"], s.matrix[s.pairs["i"], s.pairs["j"]])
    with pytest.raises(ValueError, match="min_separation"):
        coupling_scores(model, min_separation=0)
    with pytest.raises(ValueError, match="exclude_state=3"):
        coupling_scores(model, exclude_state=3)
    with pytest.raises(ValueError, match="gauge"):
        coupling_scores(model, gauge="ising")


def test_scores_of_a_sparse_model_list_only_its_edges():
    model = _random_model([3] * 4, graph=[(0, 1), (2, 3)])
    s = coupling_scores(model, apc=False)
    assert sorted((int(i), int(j)) for i, j, _ in s.pairs) == [(0, 1), (2, 3)]
    assert s.matrix[0, 2] == 0


# -- score files -------------------------------------------------------------------------------


def test_plmc_file_round_trips_and_matches_plmc_layout(tmp_path):
    model = _random_model([3] * 6, seed=6)
    s = coupling_scores(model)
    path = tmp_path / "scores.txt"
    write_plmc_couplings(path, s, sequence="MKVLAT")
    lines = path.read_text().splitlines()
    assert lines[0].startswith("1 M 2 K 0 ") and lines[-1].startswith("5 A 6 T 0 ")
    assert len(lines) == 15
    back = read_plmc_couplings(path)
    # plmc writes six decimals ("%f"): the round trip is exact to half a unit of 1e-6.
    np.testing.assert_allclose(back.matrix, s.matrix, atol=5e-7 + ROUND)
    np.testing.assert_array_equal(back.positions, np.arange(1, 7))
    assert back.sequence == "MKVLAT"
    ranked = io.StringIO()
    write_plmc_couplings(ranked, s, ranked=True, positions=np.arange(10, 16))
    first = ranked.getvalue().split("\n")[0].split()
    assert (int(first[0]) - 10, int(first[2]) - 10) == (s.pairs["i"][0], s.pairs["j"][0])
    ranked.seek(0)
    np.testing.assert_allclose(read_plmc_couplings(ranked).matrix, s.matrix, atol=5e-7 + ROUND)
    with pytest.raises(ValueError, match="has 5 fields, plmc writes 6"):
        read_plmc_couplings(io.StringIO("1 M 2 K 0.5\n"))
    with pytest.raises(ValueError, match="letters"):
        write_plmc_couplings(io.StringIO(), s, sequence="MK")


def test_ccmpred_matrix_round_trips(tmp_path):
    S = coupling_scores(_random_model([3] * 5, seed=7)).matrix
    write_ccmpred_matrix(tmp_path / "m.mat", S)
    first = (tmp_path / "m.mat").read_text().split("\n")[0]
    assert first.endswith("\t") and first.count("\t") == 5
    # "%.20e" keeps 21 significant digits, more than float64's 17: the round trip is exact.
    np.testing.assert_array_equal(read_ccmpred_matrix(tmp_path / "m.mat"), S)
    with pytest.raises(ValueError, match="NaN"):
        write_ccmpred_matrix(io.StringIO(), np.full((2, 2), np.nan))


# -- synthetic alignments ----------------------------------------------------------------------


def test_bundled_alignment_matches_its_generator():
    X, contacts, model = load_synthetic_alignment()
    assert X.shape == (BUNDLED["n_sequences"], BUNDLED["n_columns"])
    assert X.min() >= 0 and X.max() <= 20
    # The model rebuilt from the recorded seed is the one that drew the file: same edges.
    np.testing.assert_array_equal(contacts, np.array(model.graph.edges))
    far = contacts[contacts[:, 1] - contacts[:, 0] >= BUNDLED["min_separation"]]
    assert len(far) == BUNDLED["n_contacts"]


def test_make_contact_potts_builds_backbone_and_long_range_contacts():
    model = make_contact_potts(12, n_states=5, n_contacts=4, min_separation=4, random_state=0)
    edges = np.array(model.graph.edges)
    assert {(i, i + 1) for i in range(11)} <= set(map(tuple, edges.tolist()))
    assert np.sum(edges[:, 1] - edges[:, 0] >= 4) == 4
    with pytest.raises(ValueError, match="n_contacts"):
        make_contact_potts(6, n_contacts=10, min_separation=4)


def test_synthetic_chains_mix_at_the_bundled_settings():
    # DiscreteMRF.sample checks the split R-hat of the chains' energies over the last half of the
    # sweeps (one chain per sequence) and warns when it exceeds 1.1: at the bundled model's
    # settings, 60 chains of 1000 sweeps do not warn. (The exact marginals are out of reach: the
    # contact graph has treewidth 5, an 86-million-entry table at 21 states.)
    settings = {**BUNDLED, "n_sequences": 60}
    with warnings.catch_warnings():
        warnings.simplefilter("error", SamplingWarning)
        X, contacts, model = make_synthetic_alignment(**settings)
    assert X.shape == (60, BUNDLED["n_columns"])
    # The same seed draws the same model as the bundled file's.
    np.testing.assert_array_equal(contacts, load_synthetic_alignment().contacts)


def test_readers_and_writers_keep_their_contracts(tmp_path):
    # #40: each of these broke a promise of its docstring without a word.
    import io

    from skmrf.protein import average_product_correction, read_alignment, read_plmc_couplings, write_fasta

    # nonstandard="drop" dropping every sequence returned a (0, L) alignment
    with pytest.raises(ValueError, match=r"Every one of the 2 sequences holds a letter outside.*'X'.*'gap'"):
        read_alignment(io.StringIO(">a\nACXD\n>b\nXCAD\n"), nonstandard="drop")
    # UTF-8 names read from a path were mangled ('s\ufffd\ufffdq1'); from a text stream they were kept
    path = tmp_path / "utf8.fasta"
    path.write_bytes(">séq1 α-helix\nACDE\n>b\nACDE\n".encode())
    assert read_alignment(path).names[0] == "séq1 α-helix"
    # a name with a line break wrote a file that read back as three sequences
    with pytest.raises(ValueError, match=r"names\[0\] = 'a\\nb' holds a line break"):
        write_fasta(io.StringIO(), [[1, 2]], names=["a\nb"])
    # a pair listed twice with different scores, and a pair (i, i), broke "symmetric, zero diagonal"
    with pytest.raises(ValueError, match=r"Lines 1 and 3 both score the pair \(1, 2\), with 0.5 and 0.7"):
        read_plmc_couplings(io.StringIO("1 M 2 K 0 0.5\n1 M 3 V 0 0.1\n2 K 1 M 0 0.7\n"))
    with pytest.raises(ValueError, match="Line 2 pairs position 3 with itself"):
        read_plmc_couplings(io.StringIO("1 M 2 K 0 0.5\n3 V 3 V 0 0.1\n"))
    same = read_plmc_couplings(io.StringIO("1 M 2 K 0 0.5\n2 K 1 M 0 0.5\n"))  # listed twice, equal: harmless
    assert same.matrix[0, 1] == same.matrix[1, 0] == 0.5
    # APC of a non-symmetric matrix returned a non-symmetric result
    with pytest.raises(ValueError, match=r"S is not symmetric: S\[0, 1\] = 2 but S\[1, 0\] = 1"):
        average_product_correction(np.array([[0.0, 2.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]))


def test_a_frequent_letter_outside_the_alphabet_is_reported():
    # #40: an RNA family (public RF00167) read with the default protein alphabet had a gap fraction
    # of 0.303 instead of 0.016, every U read as a gap, without a word; a DNA file read with
    # "-ACGU" turned every T into a gap. A letter outside the alphabet that makes up more than 1 %
    # of the residues is named with the alphabet to read it with; a rare X (1 residue in 100 here)
    # is not worth a warning.
    import io
    import warnings

    from skmrf.protein import DNA_ALPHABET, RNA_ALPHABET, read_alignment

    rna = ">a\nACGUUACG-U\n>b\nACGUAACG-U\n>c\nACGUAACGAU\n"
    with pytest.warns(UserWarning, match=r"'U', not in the alphabet '-ACDEFGHIKLMNPQRSTVWY'.*alphabet='-ACGU'"):
        read_alignment(io.StringIO(rna))
    with pytest.warns(UserWarning, match=r"'T', not in the alphabet '-ACGU'.*alphabet='-ACGT'"):
        read_alignment(io.StringIO(rna.replace("U", "T")), alphabet=RNA_ALPHABET)
    protein = ">a\n" + "ACDEFGHIKL" * 10 + "\n>b\n" + "ACDEFGHIKX" + "ACDEFGHIKL" * 9 + "\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_alignment(io.StringIO(rna), alphabet=RNA_ALPHABET)
        read_alignment(io.StringIO(rna.replace("U", "T")), alphabet=DNA_ALPHABET)
        read_alignment(io.StringIO(protein))  # one X in 200 residues: 0.5 %


def test_sequence_weights_keep_their_memory_bound():
    # #40: on a 12,594-sequence RNA family the default block_bytes (32 MiB) raised peak RSS from 161
    # to 950 MB: short rows made a block of every sequence, and the product of two blocks, block x
    # block float32, was 634 MB. Now both the one-hot blocks and their product stay within
    # block_bytes: the peak is at most the two blocks, their product and its boolean mask, under
    # 4 x block_bytes (1 MiB here; before the fix, 1048-row blocks and a 4.4 MB product).
    import tracemalloc

    from skmrf.protein import sequence_weights

    X = np.random.default_rng(0).integers(0, 5, (3000, 50))
    budget = 1 << 20
    tracemalloc.start()
    try:
        w = sequence_weights(X, 0.8, block_bytes=budget)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 4 * budget, peak
    np.testing.assert_array_equal(w, sequence_weights(X, 0.8))  # the blocks change no count
