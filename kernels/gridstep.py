"""One step of many cooperative grid environments at once (the O-MAPL chapter's `CoopGridEnv`).

Each environment is a ``size x size`` grid with N agents and N landmarks. Agent i at cell p_i takes an action
a_i in {0: stay, 1: up (+y), 2: down (-y), 3: left (-x), 4: right (+x)}; a move off the grid leaves it in place.
All agents move at once. The shared team reward after the move is::

    r = - (1 / N) sum_l min_i |p_i' - g_l|_1 / (2 (size - 1))  -  collision * #{pairs i < j with p_i' = p_j'}

so that r = 0 exactly when every landmark is covered and no two agents share a cell: the agents must split the
landmarks between them (the cooperative part; one greedy agent per nearest landmark collides or leaves one bare).

Three implementations with one signature ``(pos, goal, action, size, collision) -> (pos', reward)`` on int64 arrays
pos (n, N, 2), goal (n, N, 2), action (n, N) (reward float64 (n,)): ``step_ref`` (NumPy, whole arrays),
``step_njit`` (``@njit``, one fused pass) and ``step_cuda`` (one CUDA thread per environment; simulator-tested).
``benchmark`` times them against stepping PettingZoo-style environments one at a time (what a user would write).
"""
from __future__ import annotations

import numpy as np
from numba import cuda, njit

from icml25nb.core import check_array, check_float, check_int
from icml25nb.kernels._bench import race as _race

__all__ = ["MOVES", "check_grid_inputs", "step_ref", "step_njit", "step_cuda", "benchmark"]

MOVES = np.array([[0, 0], [0, 1], [0, -1], [-1, 0], [1, 0]], dtype=np.int64)  # stay, up, down, left, right


def check_grid_inputs(pos, goal, action, size, collision):
    """pos (n, N, 2) and goal (n, N, 2) int64 cells inside [0, size), action (n, N) int64 in [0, 5), size >= 2 and
    collision >= 0 finite, as C-contiguous writeable arrays; a one-line ValueError/TypeError naming the argument."""
    size = check_int("size", size, 2)
    collision = check_float("collision", collision, 0.0)
    out = []
    for name, x, nd in (("pos", pos, 3), ("goal", goal, 3), ("action", action, 2)):
        x = check_array(name, x, ndim=nd, dtype=np.int64)
        if not x.flags.writeable or not x.flags.c_contiguous:
            x = np.ascontiguousarray(x).copy()
        out.append(x)
    pos, goal, action = out
    if pos.shape[0] < 1 or pos.shape[1] < 1 or pos.shape[2] != 2:
        raise ValueError(f"pos must have shape (n_envs >= 1, n_agents >= 1, 2), got {pos.shape}")
    if goal.shape != pos.shape:
        raise ValueError(f"goal must have pos's shape {pos.shape}, got {goal.shape}")
    if action.shape != pos.shape[:2]:
        raise ValueError(f"action must have shape {pos.shape[:2]} (n_envs, n_agents), got {action.shape}")
    for name, x in (("pos", pos), ("goal", goal)):
        if x.min() < 0 or x.max() >= size:
            raise ValueError(f"{name} must hold cells in [0, {size}), got values in [{x.min()}, {x.max()}]")
    if action.min() < 0 or action.max() > 4:
        raise ValueError(f"action must be in 0..4 (stay, up, down, left, right), got values in "
                         f"[{action.min()}, {action.max()}]")
    return pos, goal, action, size, collision


def step_ref(pos, goal, action, size: int = 5, collision: float = 0.5):
    "NumPy reference: the step of every environment on whole arrays."
    pos, goal, action, size, collision = check_grid_inputs(pos, goal, action, size, collision)
    n, N, _ = pos.shape
    new = np.clip(pos + MOVES[action], 0, size - 1)
    d = np.abs(new[:, :, None, :] - goal[:, None, :, :]).sum(-1)  # (n, agent, landmark)
    cover = d.min(axis=1).sum(axis=1) / (N * 2.0 * (size - 1))
    same = (new[:, :, None, :] == new[:, None, :, :]).all(-1)  # (n, N, N)
    pairs = np.triu(same, k=1).sum(axis=(1, 2))
    return new, -cover - collision * pairs


@njit(cache=True)
def _step_njit(pos, goal, action, size, collision, moves):
    n, N, _ = pos.shape
    new = np.empty_like(pos)
    r = np.empty(n)
    scale = 1.0 / (N * 2.0 * (size - 1))
    for e in range(n):
        for i in range(N):
            a = action[e, i]
            for k in range(2):
                c = pos[e, i, k] + moves[a, k]
                new[e, i, k] = min(max(c, 0), size - 1)
        cover = 0
        for l in range(N):
            best = 1 << 40
            for i in range(N):
                dd = abs(new[e, i, 0] - goal[e, l, 0]) + abs(new[e, i, 1] - goal[e, l, 1])
                if dd < best:
                    best = dd
            cover += best
        pairs = 0
        for i in range(N):
            for j in range(i + 1, N):
                if new[e, i, 0] == new[e, j, 0] and new[e, i, 1] == new[e, j, 1]:
                    pairs += 1
        r[e] = -cover * scale - collision * pairs
    return new, r


def step_njit(pos, goal, action, size: int = 5, collision: float = 0.5):
    "CPU kernel for `step_ref`: one fused pass over the environments, inputs checked first."
    pos, goal, action, size, collision = check_grid_inputs(pos, goal, action, size, collision)
    return _step_njit(pos, goal, action, size, collision, MOVES)


@cuda.jit
def _step_cuda_kernel(pos, goal, action, size, collision, moves, new, r):
    e = cuda.grid(1)
    n, N, _ = pos.shape
    if e >= n:
        return
    for i in range(N):
        a = action[e, i]
        for k in range(2):
            c = pos[e, i, k] + moves[a, k]
            new[e, i, k] = min(max(c, 0), size - 1)
    cover = 0
    for l in range(N):
        best = 1 << 40
        for i in range(N):
            dd = abs(new[e, i, 0] - goal[e, l, 0]) + abs(new[e, i, 1] - goal[e, l, 1])
            if dd < best:
                best = dd
        cover += best
    pairs = 0
    for i in range(N):
        for j in range(i + 1, N):
            if new[e, i, 0] == new[e, j, 0] and new[e, i, 1] == new[e, j, 1]:
                pairs += 1
    r[e] = -cover / (N * 2.0 * (size - 1)) - collision * pairs


_THREADS = 128


def step_cuda(pos, goal, action, size: int = 5, collision: float = 0.5):
    "CUDA kernel for `step_ref` (one thread per environment); host arrays in, host arrays out."
    pos, goal, action, size, collision = check_grid_inputs(pos, goal, action, size, collision)
    n = pos.shape[0]
    new, r = cuda.device_array(pos.shape, dtype=np.int64), cuda.device_array(n)
    blocks = (n + _THREADS - 1) // _THREADS
    _step_cuda_kernel[blocks, _THREADS](cuda.to_device(pos), cuda.to_device(goal), cuda.to_device(action), size,
                                        float(collision), cuda.to_device(MOVES), new, r)
    return new.copy_to_host(), r.copy_to_host()


def benchmark(size: str = "default", repeat: int = 3) -> dict:
    """One step of n cooperative grid environments (2 agents, 5 x 5): the NumPy reference and @njit against the public
    entry point a user calls (`icml25nb.rl.omapl.CoopGridVec.step`: the kernel plus observations) and against what a
    PettingZoo user would write otherwise, a Python loop over n `CoopGridEnv` (parallel API) instances (n <= 1024)."""
    if size not in ("small", "default", "full"):
        raise ValueError(f"size must be 'small', 'default' or 'full', got {size!r}")
    from icml25nb.rl.omapl import CoopGridEnv, CoopGridVec
    ns = {"small": (16, 1024), "default": (16, 1024, 65536), "full": (16, 1024, 65536, 1048576)}[size]
    rows, ratios, values = {}, {}, {}
    for n in ns:
        rng = np.random.default_rng(n)
        vec = CoopGridVec(n)
        vec.reset(rng)
        pos, goal = vec.pos.copy(), vec.goal.copy()
        act = rng.integers(0, 5, (n, 2))

        def public():
            vec.pos, vec.t = pos, np.zeros(n, dtype=np.int64)
            return vec.step(act)
        fns = {"ref": lambda: step_ref(pos, goal, act), "njit": lambda: step_njit(pos, goal, act), "public": public}
        if n <= 1024:  # a Python loop over PettingZoo environments: linear in n, timed where it stays under a second
            envs = [CoopGridEnv() for _ in range(n)]
            for k, e in enumerate(envs):
                e.reset(seed=k)
            acts = [{a: int(act[k, i]) for i, a in enumerate(e.possible_agents)} for k, e in enumerate(envs)]

            def loop():
                for e, a in zip(envs, acts):
                    e.agents = list(e.possible_agents)   # keep the episode alive: time every call as a step
                    e._vec.t[:] = 0
                    e.step(a)
            fns["loop"] = loop
        best = _race(fns, max(1, repeat) * (10 if n <= 65536 else 1))
        key = f"n={n}"
        rows[f"reference, {key}"], rows[f"njit, {key}"] = best["ref"], best["njit"]
        rows[f"omapl.CoopGridVec.step (kernel + observations), {key}"] = best["public"]
        ratios[f"njit vs reference, {key}"] = best["ref"] / best["njit"]
        ratios[f"CoopGridVec.step / njit, {key}"] = best["public"] / best["njit"]
        if "loop" in best:
            rows[f"Python loop over PettingZoo CoopGridEnv, {key}"] = best["loop"]
            ratios[f"PettingZoo loop vs CoopGridVec.step, {key}"] = best["loop"] / best["public"]
        values[f"max |reward njit - reference|, {key}"] = float(
            np.abs(step_njit(pos, goal, act)[1] - step_ref(pos, goal, act)[1]).max())
    return {"kernel": "gridstep", "task": "one step of n cooperative grid environments (2 agents, 5 x 5)",
            "seconds": rows, "reference": f"reference, n={ns[-1]}", "values": values, "ratios": ratios}
