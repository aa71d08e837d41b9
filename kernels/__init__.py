"""Hand-written hot loops of the book, installed as `icml25nb.kernels`.

One module per loop. Each has a NumPy reference, an `@njit` CPU kernel and a
`@cuda.jit` kernel with the same meaning, tested against each other in
`tests/`, and an optional `benchmark(size, repeat) -> dict` that
`icml25nb bench` discovers.

- `rng`: counter-based splitmix64 random streams for `@njit` and `@cuda.jit` code.
- `mnl`: MNL bandit confidence updates (OFU-MNL++): optimistic scores, Woodbury step with H-norm projection.
- `quant`: blockwise NF4 quantise / dequantise, byte for byte the same as bitsandbytes on the CPU.
- `contraction`: randomised edge contraction (Karger) with predictions.
- `hclust`: triplet-oracle vote counting and Dasgupta's cost for hierarchical clustering.
- `ista`: batched ISTA over many (problem, penalty) configurations.
- `patch_score`: softmax-weighted patch averages of the local score machines.
- `vmf`: von Mises-Fisher sampling and brute-force top-1 inner-product search.
- `mmd`: squared maximum mean discrepancy with a Gaussian kernel.
- `amo`: brute-force counts of acyclic moral orientations of small graphs (checks exact MEC counting).
- `mec`: exact MEC size (acyclic moral orientations of a chordal graph) by super-clique transfer, `@njit` only
  (a recursion over a data-dependent memo of subproblems; its docstring says why there is no CUDA version).
- `pointmass`: one step of many point-mass reaching environments (the control block's vectorised task).
- `wl`: 1-WL colour refinement (exact colours: hash slots checked against stored representatives).
- `makespan`: step time (longest path over the schedule DAG) of many pipeline plans at once.
- `pareto`: non-dominated mask and non-dominated sorting (front ranks) of points under minimisation.
- `sketchann`: sketched distances and the argmin over (query, copy) pairs of many JL sketches (adaptive sketching).
- `tanimoto`: Tanimoto similarity between bit-packed molecular fingerprints (one-vs-many and all pairs).
- `springs`: many undamped spring systems integrated at once by velocity Verlet (the PCL chapter's data).
- `softvi`: soft (maximum-entropy) value iteration, log-sum-exp over actions, on a deterministic tabular MDP.
- `kcenter`: k-center greedy (farthest-point) selection, the distance updates of the subset chapter's baseline.
- `segpool`: per-segment (superpixel) pooling and broadcast, with atomic adds on the GPU (the P2P chapter's masks).
- `gridstep`: one step of many cooperative grid environments (the O-MAPL chapter's multi-agent task).
"""

# This folder is importable as top-level `kernels` from the repository root (Python puts the working directory on
# sys.path), where it would shadow the `kernels` package on PyPI that transformers and bitsandbytes import. Imported
# under that name, it hands the name over to the installed package, so that both work from the repository root; as
# `icml25nb.kernels` (its installed name) nothing happens.
if __name__ == "kernels":
    import importlib.machinery as _machinery
    import importlib.util as _util
    import os as _os
    import sys as _sys

    _root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    _rest = [p for p in _sys.path if _os.path.abspath(p or _os.getcwd()) != _root]
    _spec = _machinery.PathFinder.find_spec("kernels", _rest)
    if _spec is not None and _spec.origin and _os.path.abspath(_spec.origin) != _os.path.abspath(__file__):
        _mod = _util.module_from_spec(_spec)
        _sys.modules["kernels"] = _mod  # the import statement returns what sys.modules holds when this file ends
        try:
            _spec.loader.exec_module(_mod)
        except BaseException:
            del _sys.modules["kernels"]
            raise
    del _machinery, _util, _os, _sys, _root, _rest, _spec
