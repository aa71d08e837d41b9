"""Tanimoto similarity matrices of bit fingerprints (Jaccard index of bit sets), by popcount on 64-bit words.

A fingerprint of ``n_bits`` bits is stored as ``n_bits / 64`` unsigned 64-bit words (``pack_bits``: bit ``k`` is bit
``k % 64`` of word ``k // 64``). For rows ``a`` of ``A`` and ``b`` of ``B``::

    T(a, b) = |a & b| / |a | b| = c / (|a| + |b| - c),   c = popcount(a & b) summed over the words

and ``T = 0`` when both fingerprints are empty (RDKit's convention for two empty bit vectors).

Three implementations with one meaning (the counts are integers, so all three agree exactly):

- ``tanimoto_matrix_ref``: NumPy, ``np.bitwise_count`` of the AND of every pair of rows, in row chunks.
- ``tanimoto_matrix``: ``@njit(parallel=True)``, rows of ``A`` over ``prange``; a SWAR popcount (the bit-slicing
  sum that LLVM compiles to the ``popcnt`` instruction where the CPU has it) of each word of ``a & b``; the row
  counts ``|a|`` and ``|b|`` computed once.
- ``tanimoto_matrix_cuda``: ``@cuda.jit``, one thread per pair ``(i, j)`` on a 2-D grid, ``cuda.popc`` per word.

``benchmark`` compares them with what a user of RDKit would write: ``DataStructs.BulkTanimotoSimilarity`` of each
fingerprint against the list of all others.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, njit, prange

from icml25nb.core import check_choice, check_int, check_memory
from icml25nb.kernels._bench import best_time as _best_time

__all__ = ["pack_bits", "tanimoto_matrix_ref", "tanimoto_matrix", "tanimoto_matrix_cuda", "benchmark"]


def pack_bits(bits) -> np.ndarray:
    "Pack a 0/1 array (n, n_bits), n_bits a multiple of 64, into uint64 words (n, n_bits // 64), little-endian bits."
    if isinstance(bits, (str, bytes)) or bits is None:
        raise TypeError(f"bits must be a 2-D 0/1 array, got {type(bits).__name__}")
    try:
        b = np.asarray(bits)
    except (ValueError, TypeError):
        raise TypeError("bits must be a rectangular 2-D 0/1 array") from None
    if b.dtype.kind not in "biuf":
        raise TypeError(f"bits must be a 2-D 0/1 array of numbers, got dtype {b.dtype}")
    if b.ndim != 2 or b.shape[1] == 0 or b.shape[1] % 64:
        raise ValueError(f"bits must be a 2-D 0/1 array with a positive multiple of 64 columns, got shape {b.shape}")
    if b.dtype != bool and not np.isin(b, (0, 1)).all():
        raise ValueError("bits must hold only 0 and 1")
    packed = np.packbits(b.astype(bool), axis=1, bitorder="little")
    return np.ascontiguousarray(packed).view("<u8").astype(np.uint64, copy=False)


def _check(A, B):
    out = []
    for name, X in (("A", A), ("B", B)):
        if isinstance(X, (str, bytes)) or X is None:
            raise TypeError(f"{name} must be a uint64 array of packed fingerprints (see pack_bits), got "
                            f"{type(X).__name__}")
        try:
            X = np.asarray(X)
        except (ValueError, TypeError):
            raise TypeError(f"{name} must be a rectangular uint64 array of packed fingerprints (see pack_bits)") from None
        if X.dtype != np.uint64:
            raise TypeError(f"{name} must be a uint64 array of packed fingerprints (see pack_bits), got {X.dtype}")
        if X.ndim != 2 or X.shape[1] == 0:
            raise ValueError(f"{name} must be 2-D (fingerprints, words) with at least one word, got shape {X.shape}")
        out.append(np.ascontiguousarray(X))
    if out[0].shape[1] != out[1].shape[1]:
        raise ValueError(f"A and B must have the same number of words, got {out[0].shape[1]} and {out[1].shape[1]}")
    check_memory("A", float(len(out[0])) * len(out[1]), 8)  # the similarity matrix
    return out


def _from_counts(inter, ca, cb):
    union = ca[:, None] + cb[None, :] - inter
    return np.divide(inter, union, out=np.zeros(inter.shape), where=union > 0)


def tanimoto_matrix_ref(A, B=None, chunk: int = 256) -> np.ndarray:
    "NumPy reference: Tanimoto similarity of every row of `A` with every row of `B` (B = A if omitted)."
    A, B = _check(A, A if B is None else B)
    chunk = check_int("chunk", chunk, 1)
    check_memory("chunk", float(min(chunk, len(A))) * len(B) * A.shape[1] + 2.0 * len(A) * len(B), 8)
    ca = np.bitwise_count(A).sum(1, dtype=np.int64)
    cb = np.bitwise_count(B).sum(1, dtype=np.int64)
    inter = np.empty((len(A), len(B)), np.int64)
    for i0 in range(0, len(A), chunk):
        inter[i0:i0 + chunk] = np.bitwise_count(A[i0:i0 + chunk, None, :] & B[None, :, :]).sum(-1, dtype=np.int64)
    return _from_counts(inter, ca, cb)


@njit(cache=True, inline="always")
def _popcount64(x):
    "Bits set in a uint64 (SWAR: pairs, nibbles, bytes, then one multiply sums the bytes)."
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True)
def _row_counts(X):
    n, w = X.shape
    out = np.zeros(n, np.int64)
    for i in range(n):
        s = 0
        for k in range(w):
            s += _popcount64(X[i, k])
        out[i] = s
    return out


@njit(cache=True, parallel=True)
def _tanimoto_njit(A, B, ca, cb, out):
    n, w = A.shape
    m = B.shape[0]
    for i in prange(n):
        for j in range(m):
            c = 0
            for k in range(w):
                c += _popcount64(A[i, k] & B[j, k])
            u = ca[i] + cb[j] - c
            out[i, j] = c / u if u > 0 else 0.0


def tanimoto_matrix(A, B=None) -> np.ndarray:
    "@njit kernel: Tanimoto similarity of every row of `A` with every row of `B` (B = A if omitted)."
    A, B = _check(A, A if B is None else B)
    out = np.empty((len(A), len(B)))
    if out.size:
        _tanimoto_njit(A, B, _row_counts(A), _row_counts(B), out)
    return out


@cuda.jit
def _tanimoto_cuda_kernel(A, B, ca, cb, out):
    i, j = cuda.grid(2)
    if i < A.shape[0] and j < B.shape[0]:
        c = 0
        for k in range(A.shape[1]):
            c += cuda.popc(A[i, k] & B[j, k])
        u = ca[i] + cb[j] - c
        if u > 0:
            out[i, j] = c / u
        else:
            out[i, j] = 0.0


def tanimoto_matrix_cuda(A, B=None, threads: int = 16) -> np.ndarray:
    "@cuda.jit kernel: Tanimoto similarity of every row of `A` with every row of `B` (B = A if omitted)."
    A, B = _check(A, A if B is None else B)
    threads = check_int("threads", threads, 1, 32)  # threads^2 per block, at most 1024
    out = np.zeros((len(A), len(B)))
    if out.size == 0:
        return out
    ca, cb = _row_counts(A), _row_counts(B)
    grid = (math.ceil(len(A) / threads), math.ceil(len(B) / threads))
    d_out = cuda.to_device(out)
    _tanimoto_cuda_kernel[grid, (threads, threads)](cuda.to_device(A), cuda.to_device(B), cuda.to_device(ca),
                                                    cuda.to_device(cb), d_out)
    return d_out.copy_to_host()


def _molecule_like_bits(n: int, n_bits: int, seed: int) -> np.ndarray:
    "Random 0/1 fingerprints with a Morgan-like density (about 3% of bits set, varying per row)."
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.05, size=(n, 1))
    return rng.random((n, n_bits)) < p


def benchmark(size: str = "default", repeat: int = 3) -> dict:
    "All-pairs Tanimoto of n fingerprints of 2048 bits: NumPy reference, @njit, RDKit's BulkTanimotoSimilarity."
    size = check_choice("size", size, ("small", "default", "full"))
    from rdkit import DataStructs

    from icml25nb.generative.combimots import diversity, fingerprints
    n = {"small": 300, "default": 2000, "full": 10000}[size]
    bits = _molecule_like_bits(n, 2048, seed=0)
    P = pack_bits(bits)
    fps = []
    for row in bits:
        bv = DataStructs.ExplicitBitVect(2048)
        bv.SetBitsFromList(np.flatnonzero(row).tolist())
        fps.append(bv)

    def rdkit_run():
        return np.array([DataStructs.BulkTanimotoSimilarity(f, fps) for f in fps])

    tanimoto_matrix(P[:2])  # compile
    secs = {"numpy reference (bitwise_count)": _best_time(lambda: tanimoto_matrix_ref(P), 1 if n <= 2000 else 0),
            "njit (SWAR popcount)": _best_time(lambda: tanimoto_matrix(P), repeat),
            "rdkit BulkTanimotoSimilarity (row by row)": _best_time(rdkit_run, min(repeat, 1))}
    # the public function a user calls: SMILES in (RDKit Morgan fingerprints, then the kernel), mean distance out
    smiles = ["C" * (1 + i % 30) + "O" * (1 + i // 30 % 5) + "N" * (i // 150) for i in range(n)]
    fp = fingerprints(smiles)
    secs["njit on the molecules' Morgan fingerprints"] = _best_time(lambda: tanimoto_matrix(fp), repeat)
    secs["combimots.diversity (SMILES in: fingerprints + njit)"] = _best_time(lambda: diversity(smiles), min(repeat, 1))
    ours, theirs = tanimoto_matrix(P), rdkit_run()
    import numba
    return {"kernel": "tanimoto", "task": f"all-pairs Tanimoto, {n} x {n} fingerprints of 2048 bits; "
            f"{numba.get_num_threads()} numba thread(s)", "seconds": secs,
            "reference": "numpy reference (bitwise_count)",
            "ratios": {"rdkit / njit": secs["rdkit BulkTanimotoSimilarity (row by row)"] / secs["njit (SWAR popcount)"],
                       "numpy / njit": secs["numpy reference (bitwise_count)"] / secs["njit (SWAR popcount)"],
                       "combimots.diversity / njit (same molecules)":
                           secs["combimots.diversity (SMILES in: fingerprints + njit)"]
                           / secs["njit on the molecules' Morgan fingerprints"]},
            "njit equals rdkit": bool(np.abs(ours - theirs).max() <= 1e-12)}
