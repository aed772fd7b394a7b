"""Protein families: alignments, sequence weights, the zero-sum gauge and DCA coupling scores.

Direct coupling analysis (DCA) fits a Potts model with 21 states (the gap and the 20 amino
acids) on the complete graph over the columns of a multiple sequence alignment; the
strongest couplings, scored by the Frobenius norm of each coupling block in the zero-sum
gauge with the average-product correction, predict residue contacts. This module reads
alignments (:func:`read_alignment`), weights sequences (:func:`sequence_weights`), converts a
fitted model to the zero-sum gauge (:func:`zero_sum_gauge`), scores pairs
(:func:`coupling_scores`), and reads and writes the score files of plmc and CCMpred. Import
it as ``skmrf.protein``; the estimators fit the model::

    from skmrf import PseudoLikelihoodEstimator
    from skmrf.protein import coupling_scores, read_alignment, sequence_weights

    X, names, _ = read_alignment("family.a2m")
    w = sequence_weights(X, identity=0.8)
    est = PseudoLikelihoodEstimator(graph="complete", n_states=21, alpha=0.01).fit(X)
    scores = coupling_scores(est, min_separation=5)
    scores.pairs[:10]   # the ten strongest pairs (i, j, score)
"""

from ._alignment import (
    ALPHABET,
    DNA_ALPHABET,
    PYDCA_ALPHABET,
    RNA_ALPHABET,
    Alignment,
    read_alignment,
    sequence_weights,
)
from ._formats import (
    PlmcCouplings,
    read_ccmpred_matrix,
    read_plmc_couplings,
    write_ccmpred_matrix,
    write_plmc_couplings,
)
from ._scores import CouplingScores, PottsParameters, average_product_correction, coupling_scores, zero_sum_gauge
from ._synthetic import (
    SyntheticAlignment,
    load_synthetic_alignment,
    make_contact_potts,
    make_synthetic_alignment,
    write_fasta,
)

__all__ = [
    "ALPHABET",
    "DNA_ALPHABET",
    "PYDCA_ALPHABET",
    "RNA_ALPHABET",
    "Alignment",
    "CouplingScores",
    "PlmcCouplings",
    "PottsParameters",
    "SyntheticAlignment",
    "average_product_correction",
    "coupling_scores",
    "load_synthetic_alignment",
    "make_contact_potts",
    "make_synthetic_alignment",
    "read_alignment",
    "read_ccmpred_matrix",
    "read_plmc_couplings",
    "sequence_weights",
    "write_ccmpred_matrix",
    "write_fasta",
    "write_plmc_couplings",
    "zero_sum_gauge",
]
