"""kernels/tanimoto.py: Tanimoto matrices of packed bit fingerprints, NumPy reference vs @njit vs CUDA (simulator),
against RDKit's own Tanimoto on the same bit vectors and against set arithmetic."""
import numpy as np
import pytest
from rdkit import DataStructs

from icml25nb.kernels import tanimoto as T


def _bits(n, n_bits, seed, empty=()):
    b = T._molecule_like_bits(n, n_bits, seed)
    for i in empty:
        b[i] = False
    return b


def _rdkit(bits_a, bits_b):
    "RDKit's Tanimoto of every pair, from the same bits."
    def fps(bits):
        out = []
        for row in bits:
            bv = DataStructs.ExplicitBitVect(bits.shape[1])
            bv.SetBitsFromList(np.flatnonzero(row).tolist())
            out.append(bv)
        return out
    fa, fb = fps(bits_a), fps(bits_b)
    return np.array([DataStructs.BulkTanimotoSimilarity(f, fb) for f in fa])


def test_pack_bits_layout():
    bits = np.zeros((2, 128), bool)
    bits[0, 0] = bits[0, 63] = bits[1, 64] = bits[1, 127] = True
    P = T.pack_bits(bits)
    assert P.dtype == np.uint64 and P.shape == (2, 2)
    assert P[0, 0] == (1 | (1 << 63)) and P[0, 1] == 0 and P[1, 0] == 0 and P[1, 1] == (1 | (1 << 63))


def test_reference_and_njit_match_rdkit_and_sets():
    a, b = _bits(37, 256, 1, empty=(4,)), _bits(23, 256, 2, empty=(0,))
    A, B = T.pack_bits(a), T.pack_bits(b)
    want = _rdkit(a, b)
    for got in (T.tanimoto_matrix_ref(A, B, chunk=5), T.tanimoto_matrix(A, B)):
        assert got.shape == (37, 23)
        np.testing.assert_array_equal(got, want)  # integer counts, one division: bit for bit
    i, j = 7, 11  # set arithmetic on one pair
    sa, sb = set(np.flatnonzero(a[i])), set(np.flatnonzero(b[j]))
    assert T.tanimoto_matrix(A, B)[i, j] == len(sa & sb) / len(sa | sb)
    assert T.tanimoto_matrix(A, B)[4, 0] == 0.0  # two empty fingerprints: 0, as RDKit


def test_self_similarity_and_symmetry():
    A = T.pack_bits(_bits(30, 1024, 3, empty=(2,)))
    S = T.tanimoto_matrix(A)
    np.testing.assert_array_equal(S, S.T)
    d = np.diag(S)
    assert d[2] == 0.0 and np.all(np.delete(d, 2) == 1.0)
    np.testing.assert_array_equal(S, T.tanimoto_matrix_ref(A))


def test_single_word_and_all_ones():
    ones = np.full((1, 1), np.uint64(2**64 - 1))
    half = np.array([[np.uint64(0xFFFFFFFF)]])
    for f in (T.tanimoto_matrix_ref, T.tanimoto_matrix, T.tanimoto_matrix_cuda):
        assert f(ones, half)[0, 0] == 0.5 and f(ones)[0, 0] == 1.0


def test_cuda_simulator_agrees():
    "Grid larger than the matrix on both axes (the bounds test) and an empty pair (the zero-union branch)."
    a, b = _bits(9, 128, 4, empty=(1,)), _bits(5, 128, 5, empty=(3,))
    A, B = T.pack_bits(a), T.pack_bits(b)
    got = T.tanimoto_matrix_cuda(A, B, threads=4)
    np.testing.assert_array_equal(got, T.tanimoto_matrix_ref(A, B))
    assert got[1, 3] == 0.0


def test_empty_inputs():
    A = np.zeros((0, 2), np.uint64)
    B = T.pack_bits(_bits(3, 128, 6))
    for f in (T.tanimoto_matrix_ref, T.tanimoto_matrix, T.tanimoto_matrix_cuda):
        assert f(A, B).shape == (0, 3)


def test_bad_input():
    with pytest.raises(TypeError, match="A must be a uint64"):
        T.tanimoto_matrix(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="same number of words"):
        T.tanimoto_matrix(np.zeros((2, 2), np.uint64), np.zeros((2, 3), np.uint64))
    with pytest.raises(ValueError, match="B must be 2-D"):
        T.tanimoto_matrix_ref(np.zeros((2, 2), np.uint64), np.zeros(2, np.uint64))
    with pytest.raises(ValueError, match="bits must be a 2-D"):
        T.pack_bits(np.zeros((2, 100)))
    with pytest.raises(ValueError, match="only 0 and 1"):
        T.pack_bits(np.full((1, 64), 2))


def test_benchmark_small_runs():
    out = T.benchmark("small", repeat=1)
    assert out["njit equals rdkit"] and out["kernel"] == "tanimoto"
    assert set(out["ratios"]) == {"rdkit / njit", "numpy / njit", "combimots.diversity / njit (same molecules)"}
