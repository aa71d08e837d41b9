"""Reliability (fuzz) suite for the chapters creativity, flowdiv, coopetition, cpt, grokking, lora_landscape, precond
and hclust (issue 49): every public function, called as a hostile but fair user would, returns a clean answer or
raises a one-line ValueError/TypeError naming the argument; equivalent inputs (float32, non-contiguous, lists) give
the float64 answer.

Three parts: one test per defect found (each failed before its input check: the comment says what happened), a
hostile-input sweep (`refuses_each`) over the public functions, and property-based cases with hypothesis."""
import math
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from fuzzutil import BAD_NUMBERS, HUGE_SIZES, assert_refused, non_contiguous, outcome, refuses_each, same

import icml25nb.algorithms.hclust as HC
import icml25nb.generative.creativity as CR
import icml25nb.generative.flowdiv as FD
import icml25nb.optim.coopetition as CO
import icml25nb.optim.cpt as CP
import icml25nb.optim.grokking as GR
import icml25nb.optim.lora_landscape as LL
import icml25nb.optim.precond as PC

NAN, INF = float("nan"), float("inf")
IMGS = np.random.default_rng(0).uniform(-1, 1, (3, 5, 5))
NOT_INTS = (NAN, INF, "3", None, True, 2.5, 1j)  # where an integer (a size, a count) is expected
NOT_REALS = (NAN, INF, -INF, "3", None, True, 1j)  # where a finite real number is expected
NOT_NONE_INTS, NOT_NONE_REALS = NOT_INTS[:3] + NOT_INTS[4:], NOT_REALS[:4] + NOT_REALS[5:]  # None is the default there


def _task(seed=0):
    return CO.make_exemplar_task(n_classes=8, n_labels=4, dim=3, n_novel=4, seed=seed)


def _same_label_task():
    "A task whose classes all carry one label (make_exemplar_task(2 classes, 2 labels) draws one at seed 1)."
    t = CO.make_exemplar_task(n_classes=2, n_labels=2, dim=2, n_novel=2, seed=1)
    assert len(set(t.labels.tolist())) == 1
    return t


def _sensing():
    return LL.make_sensing_problem(m=3, n=3, r_true=1, n_meas=12, seed=0)


def _hier():
    return HC.hsbm(3, seed=0)


# ---------------------------------------------------------------------------------------------------------------
# 1. One case per defect found. Before: what the call did before its input check (all fail on the parent commit).
# ---------------------------------------------------------------------------------------------------------------
DEFECTS = [
    # creativity
    ("train_denoiser batch=0", lambda: CR.train_denoiser(CR.ConvDenoiser(4, emb=4), IMGS, steps=1, batch=0), "batch"),  # NaN losses
    ("train_denoiser lr=nan", lambda: CR.train_denoiser(CR.ConvDenoiser(4, emb=4), IMGS, steps=1, lr=NAN), "lr"),  # NaN losses
    ("noise_schedule None", lambda: CR.noise_schedule(None), "t"),  # "got array(nan)": no type named
    ("noise_schedule '0.5'", lambda: CR.noise_schedule("0.5"), "t"),  # a string accepted as 0.5
    ("ideal_denoiser t array", lambda: CR.ideal_denoiser(IMGS, np.array([0.5, 0.6]), IMGS), "t"),  # "truth value of an array is ambiguous"
    ("r2 constant image", lambda: CR.r2(np.ones((1, 4, 4)), IMGS[:1, :4, :4]), "a"),  # NaN
    ("nearest_train_distance zero image", lambda: CR.nearest_train_distance(IMGS, np.zeros((2, 5, 5))), "train"),  # inf
    ("scheduled_els time not covered", lambda: CR.scheduled_els(IMGS, {0.5: 3})(IMGS, 0.25), "k_of_t"),  # KeyError
    ("scheduled_ls k_of_t not a dict", lambda: CR.scheduled_ls(IMGS, [3]), "k_of_t"),  # TypeError only when sampling
    ("calibrate_patch_size steps=0", lambda: CR.calibrate_patch_size(lambda x, t: x, IMGS, IMGS, steps=0), "steps"),  # empty result
    ("calibrate_patch_size ks=()", lambda: CR.calibrate_patch_size(lambda x, t: x, IMGS, IMGS, ks=(), steps=1), "ks"),  # argmax of an empty sequence
    ("ConvDenoiser emb=1", lambda: CR.ConvDenoiser(4, emb=1), "emb"),  # RuntimeError (shapes) at the first forward
    ("ConvDenoiser channels=0", lambda: CR.ConvDenoiser(0), "channels"),  # torch error deep inside
    ("ddim_sample steps=1e12", lambda: CR.ddim_sample(lambda x, t: x, IMGS, 10**12), "steps"),  # runs for days
    ("ddim_sample denoise_fn=None", lambda: CR.ddim_sample(None, IMGS, 2), "denoise_fn"),  # 'NoneType' is not callable
    # flowdiv
    ("log_likelihood batch=0", lambda: FD.log_likelihood(FD.VelocityMLP(2, 4, 1), np.zeros((3, 2)), 2, batch=0), "batch"),  # RuntimeError in split
    ("density_2d xy (m, 3)", lambda: FD.density_2d("checkerboard", np.zeros((2, 3))), "xy"),  # density of a 3-D point (wrong)
    ("density_2d NaN", lambda: FD.density_2d("checkerboard", np.full((2, 2), NAN)), "xy"),  # density 0 at NaN
    ("train_flow log_every=0", lambda: FD.train_flow("checkerboard", steps=1, batch=2, hidden=4, log_every=0), "log_every"),  # ZeroDivisionError
    ("train_flow lr=nan", lambda: FD.train_flow("checkerboard", steps=1, batch=2, hidden=4, lr=NAN), "lr"),  # NaN model
    ("checkerboard_path_density t=0", lambda: FD.checkerboard_path_density(torch.zeros(2, 2), torch.zeros(2)), "t"),  # NaN
    ("checkerboard_density scale=0", lambda: FD.checkerboard_density(np.zeros((2, 2)), 0.0), "scale"),  # NaN
    ("marginal_bound n_grid=1", lambda: FD.marginal_bound(FD.VelocityMLP(2, 4, 1), 1, 3.5, 1), "n_grid"),  # IndexError
    ("exact_divergence numpy x", lambda: FD.exact_divergence(FD.VelocityMLP(2, 4, 1), np.zeros((2, 2)), torch.zeros(2)), "x"),  # AttributeError
    ("exact_divergence t shape", lambda: FD.exact_divergence(FD.VelocityMLP(2, 4, 1), torch.zeros(2, 2), torch.zeros(3)), "t"),  # RuntimeError
    ("authors_lr_factor k<0", lambda: FD.authors_lr_factor(-25), "k"),  # a negative learning-rate factor
    ("euler_sample NaN x0", lambda: FD.euler_sample(FD.VelocityMLP(2, 4, 1), np.full((2, 2), NAN), 2), "x0"),  # NaN samples
    ("CheckerboardField scale=0", lambda: FD.CheckerboardField(scale=0.0), "scale"),  # inf/NaN velocities
    # coopetition
    ("train_coopetition steps=1e12", lambda: CO.train_coopetition(0.1, 0.0, 0.1, steps=10**12, dims=(2, 2, 2, 2)), "steps"),  # MemoryError
    ("train_coopetition_batch zero target", lambda: CO.train_coopetition_batch(
        [dict(mu1=0.1)], steps=2, targets=dict(CO.init_rank1((2, 2, 2, 2))[0], a=np.zeros(2)),
        init=CO.init_rank1((2, 2, 2, 2))[1]), "targets"),  # strengths 1 - L / 0: inf
    ("transience NaN", lambda: CO.transience([0.1, NAN], [0.2, 0.3]), "s1"),  # NaN peak
    ("outer_product too large", lambda: CO.outer_product(np.ones(10**4), np.ones(10**4), np.ones(10**4)), "vecs"),  # MemoryError (7 TiB)
    ("make_ciwl_only_sequences one label", lambda: CO.make_ciwl_only_sequences(_same_label_task(), 4), "task"),  # hangs forever
    ("iwl_score one label", lambda: CO.iwl_score(CO.ExemplarTransformer(2, 2), _same_label_task(), 4), "task"),  # hangs forever
    ("make_bursty_sequences n=1e12", lambda: CO.make_bursty_sequences(_task(), 10**12), "n"),  # MemoryError
    ("iwl_score model of another task", lambda: CO.iwl_score(CO.ExemplarTransformer(3, 2), _task(), 4), "model"),  # IndexError in torch
    # cpt
    ("cpt_law (3, 1) against (3,)", lambda: CP.cpt_law(np.full(8, 0.5), np.ones((3, 1)), np.ones(3), np.ones(3), np.ones(3)), "S1pt"),  # a (3, 3) table
    ("cpt_law NaN area", lambda: CP.cpt_law(np.full(8, 0.5), [1.0, NAN], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]), "S1pt"),  # NaN
    ("schedule_lrs steps=1e12", lambda: CP.schedule_lrs("constant", 10**12, 1.0), "steps"),  # runs for hours
    ("train_pt_cpt token id out of range", lambda: CP.train_pt_cpt(
        CP.TinyLM(8, 1, 2, 4, 5), np.r_[np.zeros(20, int), 9], np.zeros(20, int), {"v": np.zeros(20, int)},
        [1e-3], {}), "pt_ids"),  # IndexError deep in torch's embedding
    ("law_areas bool lrs", lambda: CP.law_areas([True, True]), "pt_lrs"),  # booleans taken as learning rate 1
    # grokking
    ("log_grid iters=-5", lambda: GR.log_grid(-5), "iters"),  # int64-min entries
    ("log_grid iters=0", lambda: GR.log_grid(0), "iters"),  # "Geometric sequence cannot include zero"
    ("mc_problem n=10.0", lambda: GR.mc_problem(10.0), "n"),  # "'float' object cannot be interpreted as an integer"
    ("nuclear_prox nothing observed", lambda: GR.nuclear_prox(*GR.mc_problem(6, 1, 0.7)[:1], np.zeros((6, 6), bool), 0.1, 5, 3), "masks"),  # NaN errors
    ("ista beta1=nan", lambda: GR.ista(*_cs()[:2], NAN, iters=5), "beta1"),  # NaN trace
    ("ista a_star zero", lambda: GR.ista(*_cs()[:2], 0.01, iters=5, a_star=np.zeros(20)), "a_star"),  # inf/NaN recovery error
    ("deep_linear_cs a_star zero", lambda: GR.deep_linear_cs(GR.CSProblem(*_cs()[:2], np.zeros(20)), iters=3), "a_star"),  # NaN
    ("train_modular log_every=0", lambda: GR.train_modular(GR.modular_data(5), steps=1, log_every=0, d=2, hidden=2), "log_every"),  # ZeroDivisionError
    ("train_modular labels out of range", lambda: GR.train_modular(dict(GR.modular_data(5), y_train=np.full(12, 7)), steps=1, d=2, hidden=2), "data['y_train']"),  # IndexError in torch
    ("ModMLP p=0", lambda: GR.ModMLP(0), "p"),  # torch error
    # lora_landscape
    ("svt tau=nan", lambda: LL.svt(np.eye(3), NAN), "tau"),  # NaN
    ("svt tau<0", lambda: LL.svt(np.eye(3), -1.0), "tau"),  # grows the singular values: not a proximal map
    ("solve_nuclear check_every=0", lambda: LL.solve_nuclear(_sensing(), 0.1, check_every=0), "check_every"),  # ZeroDivisionError
    ("lora_grad lam=nan", lambda: LL.lora_grad(np.ones((3, 1)), np.ones((3, 1)), _sensing(), NAN), "lam"),  # NaN gradient
    ("default_lr lam=nan", lambda: LL.default_lr(_sensing(), np.ones((3, 1)), np.ones((3, 1)), NAN), "lam"),  # NaN step
    ("init_factors m=-1", lambda: LL.init_factors(-1, 3, 1), "m"),  # "negative dimensions are not allowed"
    ("SensingProblem lists", lambda: LL.SensingProblem([[["a"]]], [1.0], [[1.0]]), "ops"),  # AttributeError
    ("SensingProblem NaN", lambda: LL.SensingProblem(np.full((1, 1, 1), NAN), np.ones(1), np.ones((1, 1))), "ops"),  # NaN losses
    ("random_factorisations spread (0, 1)", lambda: LL.random_factorisations(np.eye(2), 2, 3, spread=(0.0, 1.0)), "spread"),  # geomspace error
    ("run_diagnostics optimum.obj=0", lambda: LL.run_diagnostics(np.ones((3, 1)), np.ones((3, 1)), _sensing(), 0.1,
                                                                 LL.NuclearSolution(np.eye(3), 0.0, 0.0, 1, 0.1)), "optimum"),  # ZeroDivisionError
    ("local_reference NaN X0", lambda: LL.local_reference(_sensing(), 0.1, X0=np.full((3, 3), NAN), max_iter=3), "X0"),  # runs to max_iter on NaN
    ("fdm_gain misspelt factor", lambda: FD.fdm_gain(layer=4), "setting"),  # ignored: the default setting measured
    ("excess_nll cfg without n_test", lambda: FD.excess_nll(FD.VelocityMLP(2, 4, 1), {"data_scale": 1.0}, 0), "cfg"),  # KeyError
    ("grok_ratio times=(1,)", lambda: GR.grok_ratio((1,)), "times"),  # "not enough values to unpack"
    ("grok_ratio times=('1', 2)", lambda: GR.grok_ratio(("1", 2)), "times"),  # TypeError from max('1', 1)
    # precond
    ("mlp_digits_demo lam=0", lambda: PC.mlp_digits_demo(lam=0.0, steps=1), "lam"),  # ZeroDivisionError
    ("torch_clip_sgd_step lam=0", lambda: PC.torch_clip_sgd_step(np.ones(2), np.ones(2), 0.1, 0.0, [(2,)]), "lam"),  # ZeroDivisionError
    ("clip_equivalence n_cases=0", lambda: PC.clip_equivalence(0), "n_cases"),  # "zero-size array to reduction"
    ("gd_best_step grid_max=-10", lambda: PC.gd_best_step(PC.make_problem("quartic", 3), max_steps=3, grid_max=-10), "grid_max"),  # argmin of an empty sequence
    ("cosh_sum a and c lengths", lambda: PC.cosh_sum(np.ones(3), np.ones(1), np.zeros(3)), "a and c"),  # broadcast: a wrong function
    ("quartic x0 shape", lambda: PC.quartic(np.zeros(3), np.zeros(2)), "x0"),  # broadcast error at the first step
    ("npgd_torch_step lam=nan", lambda: PC.npgd_torch_step([torch.nn.Parameter(torch.ones(2))], 0.1, NAN), "lam"),  # AttributeError (no grad)
    ("npgd_torch_step grad not set", lambda: PC.npgd_torch_step([torch.nn.Parameter(torch.ones(2))], 0.1, 1.0), "params"),  # AttributeError
    ("theory_steps L0=0", lambda: PC.theory_steps(PC.TestProblem("t", sum, sum, np.zeros(1), 0.0, 1.0, np.ones(1)), "smooth_clip"), "problem.L0"),  # ZeroDivisionError
    ("dual_map separable='yes'", lambda: PC.dual_map("smooth_clip", separable="yes"), "separable"),  # a string taken as True
    # hclust (the oracle cells)
    ("query_many u=0.5", lambda: HC.SplittingOracle(_hier()[1]).query_many([0.5], [1], [2]), "u"),  # truncated to vertex 0
    ("query_many shapes", lambda: HC.SplittingOracle(_hier()[1]).query_many([0, 1], [1, 2, 3], [2]), "u, v and w"),  # numpy's broadcast message
    ("count_votes pairs=0.5", lambda: HC.SplittingOracle(_hier()[1]).count_votes([[0.5, 1]], [[2, 3]]), "pairs"),  # truncated
    ("SplittingOracle p_err='x'", lambda: HC.SplittingOracle(_hier()[1], "x"), "p_err"),  # "could not convert string to float"
    ("oracle_hc_dasgupta anchors='3'", lambda: HC.oracle_hc_dasgupta(HC.SplittingOracle(_hier()[1]), anchors="3"), "anchors"),  # '<' between str and int
    ("oracle_hc_mw votes=2.5", lambda: HC.oracle_hc_mw(HC.SplittingOracle(_hier()[1]), votes=2.5), "votes"),  # float votes into rng.integers
    ("oracle_hc_dasgupta oracle=W", lambda: HC.oracle_hc_dasgupta(_hier()[0]), "oracle"),  # AttributeError
]


def _cs():
    p = GR.cs_problem(20, 2, 8)
    return p.X, p.y, p.a_star


@pytest.mark.parametrize("label, call, name", DEFECTS, ids=[d[0] for d in DEFECTS])
def test_defect_refused(label, call, name):
    err = assert_refused(call, name=name, timeout=20)
    assert re.search(rf"(?<![\w'.]){re.escape(name)}(?![\w'])", str(err)), f"{label}: {name!r} is not named: {err}"
    if label in TYPE_ERRORS:
        assert isinstance(err, TypeError), f"{label}: a wrong type gives a TypeError, got {type(err).__name__}: {err}"


TYPE_ERRORS = {"noise_schedule None", "noise_schedule '0.5'", "mc_problem n=10.0", "ddim_sample denoise_fn=None",
               "exact_divergence numpy x", "oracle_hc_dasgupta oracle=W"}


# ---------------------------------------------------------------------------------------------------------------
# 2. Hostile-input sweep: each argument of each public function replaced by bad values, one at a time.
# ---------------------------------------------------------------------------------------------------------------
def _sweep_cases():
    net = FD.VelocityMLP(2, 4, 1)
    W, Z = _hier()
    oracle = HC.SplittingOracle(Z)
    sp = _sensing()
    task = _task()
    pp = PC.make_problem("quartic", 3)
    t, p = CO.init_rank1((2, 2, 2, 2))
    X, y, a = _cs()
    ids = np.zeros(40, dtype=np.int64)
    cases = [
        # creativity
        (CR.digits_images, {}, {"seed": (-1, 1.5, "0", None, 2**64)}),
        (CR.noise_schedule, {"t": 0.5}, {"t": (NAN, -0.1, 1.5, "0.5", None, True, [0.2, NAN])}),
        (CR.image_patches, {"x": IMGS, "k": 3}, {"x": (None, "x", np.ones((2, 2)), np.zeros((0, 3, 3)), np.full((1, 3, 3), NAN)),
                                                 "k": (2, 0, -1, 3.0, "3", True, 99), "padding": ("wrap", None)}),
        (CR.ideal_denoiser, {"x": IMGS, "t": 0.5, "train": IMGS},
         {"t": NOT_REALS + (0.0, 1.5, [0.5]), "train": (np.ones((2, 4, 4)), None, np.full((1, 5, 5), INF))}),
        (CR.local_denoiser, {"x": IMGS, "t": 0.5, "train": IMGS, "k": 3}, {"k": (2, 0, 4.0, "3", None), "t": NOT_REALS}),
        (CR.els_denoiser, {"x": IMGS, "t": 0.5, "train": IMGS, "k": 3}, {"k": (2, 0, 4.0, "3", None), "t": NOT_REALS,
                                                                         "padding": ("same", 1)}),
        (CR.ConvDenoiser, {"channels": 2, "emb": 4}, {"channels": NOT_INTS + (0,), "n3x3": NOT_INTS + (1,),
                                                      "n1x1": NOT_INTS + (-1,), "emb": NOT_INTS + (0, 3),
                                                      "dilation": NOT_INTS + (0,), "padding_mode": ("wrap", None)}),
        (CR.train_denoiser, {"model": CR.ConvDenoiser(2, emb=4), "train": IMGS, "steps": 1, "batch": 2},
         {"model": (None, "m"), "steps": NOT_INTS + (0,) + HUGE_SIZES, "batch": NOT_INTS + (0, -1) + HUGE_SIZES,
          "lr": NOT_REALS + (0.0, -1.0), "seed": (-1, "0", None)}),
        (CR.network_denoiser, {"model": CR.ConvDenoiser(2, emb=4)}, {"model": (None, np.zeros(2))}),
        (CR.ddim_sample, {"denoise_fn": lambda x, t: x, "x_T": IMGS, "steps": 2},
         {"denoise_fn": (None, 3), "x_T": (None, np.ones(3)), "steps": NOT_INTS + (0,) + HUGE_SIZES}),
        (CR.scheduled_els, {"train": IMGS, "k_of_t": {1.0: 3}}, {"train": (None, np.ones(3)), "k_of_t": (None, {}, [3], 3)}),
        (CR.scheduled_ls, {"train": IMGS, "k_of_t": {1.0: 3}}, {"train": (None, np.ones(3)), "k_of_t": (None, {}, [3])}),
        (CR.calibrate_patch_sizes, {"net_fns": {"n": lambda x, t: x}, "heldout": IMGS, "train": IMGS, "steps": 1, "ks": (1, 3)},
         {"net_fns": (None, {}, {"n": 3}), "ks": ((), (2,), "3", None), "steps": NOT_INTS + (0,) + HUGE_SIZES}),
        (CR.r2, {"a": IMGS, "b": IMGS}, {"a": (None, IMGS[:2], np.ones((3, 5, 5)), np.full((3, 5, 5), NAN)), "b": ("x",)}),
        (CR.nearest_train_distance, {"samples": IMGS, "train": IMGS},
         {"samples": (None, np.ones((2, 4, 4))), "train": (np.zeros((1, 5, 5)), np.full((1, 5, 5), NAN))}),
        # flowdiv
        (FD.AffinePath, {}, {"kind": ("vp", None)}),
        (FD.AffinePath().sample, {"x0": torch.zeros(3, 2), "x1": torch.ones(3, 2), "t": torch.full((3,), 0.5)},
         {"x0": (torch.zeros(2, 2), torch.full((3, 2), NAN)), "x1": (torch.full((3, 2), INF), torch.ones(3, 3)),
          "t": (torch.ones(3), torch.full((3,), NAN), torch.zeros(2))}),
        (FD.VelocityMLP, {"dim": 2, "hidden": 4, "layers": 1}, {"dim": NOT_INTS + (0,), "hidden": NOT_INTS + (0,) + HUGE_SIZES,
                                                                "layers": NOT_INTS + (-1,)}),
        (FD.exact_divergence, {"model": net, "x": torch.zeros(3, 2), "t": torch.zeros(3)},
         {"model": (None,), "x": (np.zeros((3, 2)), torch.zeros(3, 3), torch.full((3, 2), NAN), torch.zeros(3, 2, dtype=torch.int64)),
          "t": (torch.zeros(2), None, np.zeros(3))}),
        (FD.hutchinson_divergence, {"model": net, "x": torch.zeros(3, 2), "t": torch.zeros(3)},
         {"probes": NOT_INTS + (0,), "x": (torch.zeros(3),), "t": (torch.zeros(4),)}),
        (FD.fdm_loss, {"model": net, "ps": FD.AffinePath().sample(torch.zeros(3, 2), torch.ones(3, 2), torch.full((3,), 0.5))},
         {"lam": (NAN, INF, -1.0, "0.1", None, True)}),
        (FD.sample_2d, {"name": "checkerboard", "n": 4}, {"name": ("moons", None), "n": NOT_INTS + (0, -1) + HUGE_SIZES,
                                                         "seed": (-1, "0")}),
        (FD.density_2d, {"name": "two_moons", "xy": np.zeros((2, 2))},
         {"name": ("x",), "xy": (None, "x", np.zeros(2), np.zeros((2, 3)), np.full((2, 2), NAN), np.zeros((0, 3)))}),
        (FD.euler_sample, {"model": net, "x0": np.zeros((3, 2)), "steps": 2},
         {"x0": (None, np.zeros(2), np.zeros((3, 3)), np.full((3, 2), INF)), "steps": NOT_INTS + (0,) + HUGE_SIZES}),
        (FD.log_likelihood, {"model": net, "x": np.zeros((3, 2)), "steps": 2},
         {"x": (None, np.zeros((3, 3)), np.full((3, 2), NAN)), "steps": NOT_INTS + (0,) + HUGE_SIZES, "batch": NOT_INTS + (0, -1)}),
        (FD.eval_batch, {"name": "checkerboard", "n": 4}, {"n": NOT_INTS + (0,), "data_scale": NOT_REALS + (0.0, -1.0),
                                                          "name": ("x",), "seed": (-1, None)}),
        (FD.residual_metric, {"model": net, "x0": torch.zeros(3, 2), "x1": torch.ones(3, 2), "t": torch.full((3,), 0.5)},
         {"t": (torch.ones(3), torch.zeros(2)), "x0": (torch.full((3, 2), NAN),)}),
        (FD.authors_lr_factor, {"k": 3}, {"k": NOT_INTS + (-1,)}),
        (FD.train_flow, {"name": "checkerboard", "steps": 1, "batch": 2, "hidden": 4, "layers": 1},
         {"name": ("x", None), "method": ("sgd", None), "steps": NOT_INTS + (0,), "batch": NOT_INTS + (0,) + HUGE_SIZES,
          "lr": NOT_REALS + (0.0,), "hidden": NOT_INTS + (0,), "log_every": NOT_INTS + (0,), "layers": NOT_INTS + (-1,),
          "data_scale": NOT_REALS + (0.0,), "t_max": NOT_REALS + (0.0, 1.5), "lr_schedule": ("cos",), "seed": (-1,),
          "init_seed": (-1, "0"), "extra_terms": ("yes", 1)}),
        (FD.checkerboard_path_density, {"x": torch.zeros(2, 2), "t": torch.full((2,), 0.5)},
         {"x": (np.zeros((2, 2)), torch.zeros(2, 3), torch.full((2, 2), NAN)), "t": (torch.zeros(2), torch.ones(2), torch.full((3,), 0.5)),
          "scale": NOT_REALS + (0.0, -1.0)}),
        (FD.checkerboard_density, {"xy": np.zeros((2, 2))}, {"xy": (np.zeros((2, 3)), None), "scale": NOT_REALS + (0.0,)}),
        (FD.marginal_bound, {"model": net, "t_points": 1, "n_grid": 3},
         {"t_points": NOT_INTS + (0,) + HUGE_SIZES, "lim": NOT_REALS + (0.0,), "n_grid": NOT_INTS + (1,) + HUGE_SIZES,
          "scale": NOT_REALS + (0.0,)}),
        (FD.bound_and_tv, {"model": net, "steps": 1, "t_points": 1, "n_grid": 3},
         {"steps": NOT_INTS + (0,) + HUGE_SIZES, "n_grid": NOT_INTS + (1,) + HUGE_SIZES, "lim": NOT_REALS + (-1.0,)}),
        (FD.CheckerboardField, {}, {"t_min": NOT_REALS + (0.0, 1.0), "scale": NOT_REALS + (0.0,)}),
        # coopetition
        (CO.outer_product, {"vecs": None}, {}),  # (positional, below)
        (CO.init_rank1, {"dims": (2, 2, 2, 2)}, {"dims": ((2, 2, 2), (2, 2, 2, 0), (2, 2, 2, 2.5), "abcd", None,
                                                           (10**5, 10**5, 10**5, 10**5)), "seed": (-1, None)}),
        (CO.coopetition_loss, {"p": p, "t": t}, {"p": (None, {"a": p["a"]}, dict(p, a=np.full(2, NAN)), dict(p, a=np.ones(3)),
                                                       dict(p, a=np.array(["x", "y"]))),
                                                 "mu1": NOT_REALS + (-1.0,), "mu2": NOT_REALS, "alpha": NOT_REALS + (-0.1,)}),
        (CO.coopetition_grad, {"p": p, "t": t}, {"t": (None, dict(t, d=np.full(2, INF))), "alpha": NOT_REALS}),
        (CO.train_coopetition_batch, {"runs": [dict(mu1=0.1)], "steps": 2, "dims": (2, 2, 2, 2)},
         {"runs": (None, [], [3]),
          "steps": NOT_INTS + (0,) + HUGE_SIZES, "lr": NOT_REALS + (0.0,), "thresh": (NAN, -1.0, "0", None, True),
          "dims": ((2, 2, 2), (0, 2, 2, 2))}),
        (CO.train_coopetition, {"mu1": 0.1, "mu2": 0.0, "alpha": 0.1, "steps": 2, "dims": (2, 2, 2, 2)},
         {"mu1": NOT_REALS + (-1.0,), "steps": NOT_INTS + HUGE_SIZES, "freeze": (3, ("z",)), "lr": NOT_REALS}),
        (CO.emergence_step, {"s": [0.1, 0.6]}, {"s": (None, [], [[0.1]], [NAN], "x"), "level": NOT_REALS}),
        (CO.transience, {"s1": [0.1, 0.9, 0.2], "s2": [0.1, 0.5, 0.99]},
         {"s1": (None, [], [0.1, NAN, 0.2], [0.1, 0.2]), "s2": ([INF, 0.5, 0.9],), "keep_max": NOT_REALS + (0.0,),
          "peak_min": NOT_REALS, "ciwl_min": NOT_REALS, "emerge": NOT_REALS}),
        (CO.make_exemplar_task, {"n_classes": 4, "n_labels": 2, "dim": 2, "n_novel": 2},
         {"n_classes": NOT_INTS + (1,) + HUGE_SIZES, "n_labels": NOT_INTS + (1,), "dim": NOT_INTS + (0,) + HUGE_SIZES,
          "sigma": NOT_REALS + (-1.0,), "n_novel": NOT_INTS + (1,)}),
        (CO.make_bursty_sequences, {"task": task, "n": 3}, {"task": (None, _same_label_task()), "n": NOT_INTS + (0,) + HUGE_SIZES,
                                                            "p_bursty": (NAN, -0.1, 1.1, "1", None, True), "n_ctx": NOT_INTS + (0,)}),
        (CO.make_ciwl_only_sequences, {"task": task, "n": 3}, {"task": (None, _same_label_task()), "n": NOT_INTS + (0,) + HUGE_SIZES}),
        (CO.ExemplarTransformer, {"dim": 2, "n_labels": 2, "d_model": 4, "n_heads": 2, "n_layers": 1},
         {"dim": NOT_INTS + (0,), "n_labels": NOT_INTS + (0,), "d_model": NOT_INTS + (3,), "n_heads": NOT_INTS + (0,),
          "n_ctx": NOT_INTS + (0,)}),
        (CO.icl_score, {"model": CO.ExemplarTransformer(3, 4, 4, 1, 2), "task": task, "n": 3},
         {"model": (None, CO.ExemplarTransformer(2, 4, 4, 1, 2)), "task": (None,), "n": NOT_INTS + (0,) + HUGE_SIZES, "seed": (-1,)}),
        (CO.ciwl_score, {"model": CO.ExemplarTransformer(3, 4, 4, 1, 2), "task": task, "n": 3},
         {"model": (CO.ExemplarTransformer(3, 2, 4, 1, 2),), "task": (_same_label_task(),), "n": NOT_INTS + HUGE_SIZES}),
        (CO.iwl_score, {"model": CO.ExemplarTransformer(3, 4, 4, 1, 2), "task": task, "n": 3},
         {"model": (CO.ExemplarTransformer(3, 2, 4, 1, 2),), "task": ("t",), "n": NOT_INTS + HUGE_SIZES}),
        (CO.train_icl_transformer, {"task": task, "steps": 1, "batch_size": 2, "d_model": 4, "n_heads": 2, "n_layers": 1,
                                    "n_eval": 2},
         {"task": (None, _same_label_task()), "p_bursty": (NAN, 1.5, "1", None), "steps": NOT_INTS + (0,) + HUGE_SIZES,
          "lr": NOT_REALS + (0.0,), "batch_size": NOT_INTS + (0,) + HUGE_SIZES, "eval_every": NOT_INTS + (0,),
          "n_eval": NOT_INTS + (0,), "warmup": NOT_INTS + (-1,), "seed": (-1,)}),
        # cpt
        (CP.forward_area, {"lrs": [0.1, 0.2]}, {"lrs": (None, [], [[0.1]], [NAN], [-0.1], "x", [True, False])}),
        (CP.annealing_area, {"lrs": [0.1, 0.2]}, {"lrs": ([INF],), "lam": NOT_REALS + (1.0, -0.1)}),
        (CP.law_areas, {"pt_lrs": [0.1, 0.2, 0.1]}, {"pt_lrs": ([], [NAN]), "cpt_lrs": ([-1.0], "x"), "lam": (1.0, NAN, None),
                                                     "pt_warmup": NOT_INTS + (-1, 3)}),
        (CP.cpt_law, {"theta": np.full(8, 0.5), "S1pt": [1.0, 2.0], "S1cpt": 0.0, "S2pt": [0.1, 0.2], "S2cpt": 0.0},
         {"theta": (None, np.ones(7), np.full(8, NAN)), "S1pt": (0.0, [NAN, 1.0], "x", None, [[1.0], [2.0]]),
          "S1cpt": (-1.0, [1.0, 2.0, 3.0]), "S2pt": ([INF, 0.0],), "S2cpt": (None,)}),
        (CP.fit_cpt_law, {"curves": {"a": dict(S1pt=[1.0, 2.0], S1cpt=[0.0, 0.0], S2pt=[0.0, 0.1], S2cpt=[0.0, 0.0], loss=[2.0, 1.9])}},
         {"curves": (None, {}, {"a": {"S1pt": [1.0]}}, {"a": dict(S1pt=[1.0], S1cpt=[0.0], S2pt=[0.0], S2cpt=[0.0], loss=[NAN])}),
          "holdout": ("b", "a"), "floor": (NAN, -1.0, "0", True), "f_scale": (0.0, NAN, INF, "1", None, True)}),
        (CP.shifted_chain, {"chain": CP.markov_chain(4, 1, 0.5, seed=0)},
         {"chain": (None, np.eye(4)), "frac": (NAN, -0.1, 1.5, "0.5", None, True), "temperature": NOT_REALS + (0.0,),
          "seed": (-1, None)}),
        (CP.schedule_lrs, {"kind": "wsd", "steps": 10, "peak": 0.1}, {"kind": ("linear", None), "steps": NOT_INTS + (0,) + HUGE_SIZES,
                                                                       "peak": NOT_REALS + (0.0,), "warmup": NOT_INTS + (-1,)}),
        (CP.train_pt_cpt, {"model": CP.TinyLM(8, 1, 2, 4, 5), "pt_ids": ids, "cpt_ids": ids, "val": {"v": ids},
                           "pt_lrs": [1e-3], "cpt_runs": {}},
         {"model": (None,), "pt_ids": (np.full(40, 5), np.full(40, -1), ids[:5], ids.astype(float) + 0.5),
          "cpt_ids": (np.full(40, 9),), "val": ({}, {"v": np.full(40, 5)}, None), "pt_lrs": ([], [NAN]),
          "cpt_runs": (None, {"r": ([1e-3],)}, {"r": ([1e-3], 1.5)}, {"r": ([1e-3], 0.5, "no")}),
          "batch_size": NOT_INTS + (0,), "eval_every": NOT_INTS + (0,), "min_context": NOT_INTS + (0,),
          "seed": (-1,), "weight_decay": NOT_REALS + (-1.0,), "betas": ((0.9,), (0.9, 1.5), (NAN, 0.9))}),
        (CP.law_curves, {"run": None, "val_name": "v", "lam": 0.9}, {}),  # (below, with a real run)
        # grokking
        (GR.cs_problem, {"n": 10, "s": 2, "N": 5}, {"n": NOT_INTS + (0,) + HUGE_SIZES, "s": NOT_INTS + (0, 6), "N": NOT_INTS + (0, 10),
                                                    "seed": (-1,)}),
        (GR.log_grid, {"iters": 10}, {"iters": NOT_INTS + (0, -5), "points": NOT_INTS + (-1,) + HUGE_SIZES}),
        (GR.ista, {"X": X, "y": y, "beta1": 0.01, "iters": 3, "a_star": a},
         {"X": (None, X[0], np.full_like(X, NAN), X[:, :0]), "y": (y[:3], np.full_like(y, INF)),
          "beta1": NOT_REALS + (-0.1,), "beta2": NOT_REALS + (-0.1,), "lr": NOT_NONE_REALS + (0.0, 1e9),
          "iters": NOT_INTS + (0,), "a_star": (np.zeros(20), a[:3], np.full(20, NAN)), "points": NOT_INTS + (-1,)}),
        (GR.grok_times, {"trace": dict(t=[0, 1], train=[1.0, 0.0], test=[1.0, 0.0])},
         {"trace": (None, {}, dict(t=[0, 1], train=[1.0], test=[1.0, 0.0])), "tol_train": NOT_REALS + (-1.0,),
          "tol_test": NOT_REALS}),
        (GR.mc_problem, {"n": 6, "r": 1, "frac": 0.7}, {"n": NOT_INTS + (1,) + HUGE_SIZES, "r": NOT_INTS + (0, 6),
                                                        "frac": NOT_REALS + (0.0, 1.0)}),
        (GR.nuclear_prox, {"M": np.eye(4) + 1, "mask": np.eye(4, dtype=bool), "beta": 0.1, "iters": 3, "points": 2},
         {"M": (None, np.ones(4), np.full((4, 4), NAN)), "mask": (np.zeros((4, 4)), np.ones((4, 4)), np.eye(3), np.full((4, 4), 0.5)),
          "beta": NOT_REALS + (-1.0, [0.1, 0.2]), "iters": NOT_INTS + (-1,) + HUGE_SIZES, "points": NOT_INTS + (-1,)}),
        (GR.nuclear_prox_batch, {"Ms": np.ones((2, 3, 3)) + np.eye(3), "masks": np.stack([np.eye(3, dtype=bool)] * 2), "betas": 0.1,
                                 "iters": 2, "points": 2},
         {"betas": ([0.1, 0.2, 0.3], [[0.1]], NAN, "x"), "Ms": (np.ones((2, 3)),)}),
        (GR.deep_linear_cs, {"problem": GR.CSProblem(X, y, a), "iters": 3},
         {"problem": (None, (X, y, a), GR.CSProblem(X, y[:2], a)), "depth": NOT_INTS + (0,), "init_scale": NOT_REALS + (0.0,),
          "lr": NOT_NONE_REALS + (0.0, -1.0), "iters": NOT_INTS + (0,), "points": NOT_INTS + (-1,)}),
        (GR.modular_data, {"p": 5}, {"p": NOT_INTS + (1,) + HUGE_SIZES, "frac": NOT_REALS + (0.0, 1.0), "seed": (-1,)}),
        (GR.ModMLP, {"p": 5, "d": 2, "hidden": 2}, {"p": NOT_INTS + (1,), "d": NOT_INTS + (0,), "hidden": NOT_INTS + (0,) + HUGE_SIZES}),
        (GR.train_modular, {"data": GR.modular_data(5), "steps": 1, "d": 2, "hidden": 2},
         {"data": (None, {"p": 5}, dict(GR.modular_data(5), x_train=np.full((12, 2), 5)),
                   dict(GR.modular_data(5), y_train=np.zeros(3, int))),
          "penalty": ("l3",), "beta": NOT_REALS + (-1.0,), "lr": NOT_REALS + (0.0,), "steps": NOT_INTS + (0,) + HUGE_SIZES,
          "log_every": NOT_INTS + (0,), "d": NOT_INTS + (0,), "hidden": NOT_INTS + (0,), "seed": (-1,)}),
        (GR.acc_times, {"trace": dict(t=[0, 1], train=[0.0, 1.0], test=[0.0, 1.0])},
         {"trace": (None, dict(t=[0], train=[1.0], test=[1.0, 0.0])), "fit": NOT_REALS, "generalise": NOT_REALS}),
        # lora_landscape
        (LL.SensingProblem, {"ops": np.ones((2, 2, 2)), "y": np.ones(2), "X_true": np.ones((2, 2))},
         {"ops": (None, np.ones((2, 2)), np.full((2, 2, 2), NAN), "x"), "y": (np.ones(3), [INF, 1.0]),
          "X_true": (np.ones((2, 3)),), "link": ("tanh", None)}),
        (LL.make_sensing_problem, {"m": 3, "n": 3, "r_true": 1, "n_meas": 5},
         {"m": NOT_INTS + (0,), "n": NOT_INTS + (0,), "r_true": NOT_INTS + (0, 4), "n_meas": NOT_INTS + (0,) + HUGE_SIZES,
          "noise": NOT_REALS + (-1.0,), "freq": NOT_REALS + (0.0,), "link": ("tanh",), "seed": (-1,)}),
        (LL.nuclear_norm, {"X": np.eye(2)}, {"X": (None, np.ones(3), np.full((2, 2), NAN), "x")}),
        (LL.effective_rank, {"X": np.eye(2)}, {"X": (np.ones(3), np.full((2, 2), INF)), "rtol": NOT_REALS + (-1.0,)}),
        (LL.factor_penalty, {"A": np.ones((3, 1)), "B": np.ones((2, 1))}, {"A": (None, np.ones(3), "x"),
                                                                          "B": (np.ones((2, 2, 1)),)}),
        (LL.balanced_factors, {"X": np.eye(2)}, {"X": (None, np.ones(3), np.full((2, 2), NAN)), "r": NOT_NONE_INTS + (0, 1)}),
        (LL.random_factorisations, {"X": np.eye(2), "r": 2, "count": 2},
         {"r": NOT_INTS + (1,), "count": NOT_INTS + (0,) + HUGE_SIZES, "spread": ((0.0, 1.0), (1.0,), (NAN, 1.0), (2.0, 1.0), "ab"),
          "seed": (-1,)}),
        (LL.svt, {"W": np.eye(3), "tau": 0.1}, {"W": (None, np.ones(3), np.full((3, 3), NAN)), "tau": NOT_REALS + (-1.0,)}),
        (LL.solve_nuclear, {"problem": sp, "lam": 0.1}, {"problem": (None, "p"), "lam": NOT_REALS + (0.0, -1.0),
                                                         "tol": NOT_REALS + (-1.0,), "max_iter": NOT_INTS + (0,),
                                                         "check_every": NOT_INTS + (0,)}),
        (LL.local_reference, {"problem": sp, "lam": 0.1}, {"problem": (None,), "lam": NOT_REALS + (0.0,),
                                                           "X0": (np.ones((2, 2)), np.full((3, 3), NAN), "x"),
                                                           "tol": NOT_REALS + (0.0,), "max_iter": NOT_INTS + (0,)}),
        (LL.lora_objective, {"A": np.ones((3, 1)), "B": np.ones((3, 1)), "problem": sp, "lam": 0.1},
         {"A": (np.ones((2, 1)), None, "x"), "B": (np.ones((3, 2)),), "problem": (None,), "lam": NOT_REALS + (-1.0,)}),
        (LL.lora_grad, {"A": np.ones((3, 1)), "B": np.ones((3, 1)), "problem": sp, "lam": 0.1},
         {"A": (np.ones((2, 1)),), "problem": ("p",), "lam": NOT_REALS + (-1.0,)}),
        (LL.init_factors, {"m": 3, "n": 3, "r": 1}, {"m": NOT_INTS + (0,), "n": NOT_INTS + (0,), "r": NOT_INTS + (0,),
                                                     "init": ("zero", None), "init_scale": NOT_REALS + (0.0,),
                                                     "runs": NOT_INTS + (0,) + HUGE_SIZES, "seed": (-1,)}),
        (LL.default_lr, {"problem": sp, "A": np.ones((3, 1)), "B": np.ones((3, 1)), "lam": 0.1},
         {"problem": (None,), "A": (np.full((3, 1), NAN), np.ones((2, 1))), "lam": NOT_REALS + (-1.0,)}),
        (LL.train_lora, {"problem": sp, "r": 1, "steps": 2},
         {"problem": (None,), "r": NOT_INTS + (0,), "lam": NOT_REALS + (-1.0,), "init": ("x",), "init_scale": NOT_REALS + (0.0,),
          "steps": NOT_INTS + (0,) + HUGE_SIZES, "lr": NOT_NONE_REALS + (0.0,), "runs": NOT_NONE_INTS + (0,) + HUGE_SIZES,
          "record_every": NOT_INTS + (0,), "start": ((np.ones((1, 2, 1)), np.ones((1, 3, 1))),), "seed": (-1,)}),
        (LL.lora_hessian, {"A": np.ones((3, 1)), "B": np.ones((3, 1)), "problem": sp, "lam": 0.1},
         {"A": (np.ones((2, 3, 1)), np.ones((2, 1))), "lam": NOT_REALS + (-1.0,)}),
        (LL.run_diagnostics, {"A": np.ones((3, 1)), "B": np.ones((3, 1)), "problem": sp, "lam": 0.1,
                              "optimum": LL.NuclearSolution(np.eye(3), 1.0, 0.5, 1, 0.1)},
         {"optimum": (None, LL.NuclearSolution(np.eye(3), 0.0, 0.0, 1, 0.1), LL.NuclearSolution(np.eye(3), NAN, 0.0, 1, 0.1)),
          "lam": NOT_REALS + (-1.0,), "rtol": NOT_REALS, "hessian": ("yes", 1), "grad_tol": NOT_REALS, "A": (np.ones((2, 3, 1)),)}),
        (LL.classify_point, {"d": dict(finite=True, rel_gap=1.0, rank=1, rank_star=1, r=1, norm=1.0, norm_star=1.0,
                                       grad_norm=1.0, hess_min=0.0)},
         {"d": (None, {}, {"finite": True}), "gap_tol": NOT_REALS, "grad_tol": NOT_REALS, "hess_tol": NOT_REALS,
          "loud_factor": NOT_REALS}),
        # precond
        (PC.kernel_conjugate_derivative, {"kind": "arcsinh"}, {"kind": ("tanh", None, 3)}),
        (PC.dual_map, {"kind": "hard_clip"}, {"kind": ("x",), "separable": ("yes", 1), "eps": NOT_REALS + (-1.0,)}),
        (PC.cosh_sum, {"a": np.ones(2), "c": np.zeros(2), "x0": np.ones(2)},
         {"a": (np.zeros(2), np.ones(3), np.full(2, NAN), None), "c": (np.zeros(3), [INF, 0.0]), "x0": (np.ones(3), [NAN, 0.0], None)}),
        (PC.cosh_norm, {"c": np.zeros(2), "x0": np.ones(2)}, {"c": ([NAN, 0.0], "x"), "x0": (np.ones(3), [INF, 0.0])}),
        (PC.quartic, {"c": np.zeros(2), "x0": np.ones(2)}, {"c": ([NAN, 0.0], np.zeros((2, 2))), "x0": (np.ones(1), None)}),
        (PC.make_problem, {"name": "quartic", "d": 2}, {"name": ("x",), "d": NOT_INTS + (0,) + HUGE_SIZES,
                                                        "radius": NOT_REALS + (0.0,), "seed": (-1,)}),
        (PC.npgd, {"f": pp.f, "grad": pp.grad, "x0": pp.x0, "gamma": 0.1, "lam": 0.1, "steps": 3},
         {"f": (None,), "grad": (3,), "x0": (np.ones((2, 2)), [NAN, 0.0, 0.0], None), "gamma": NOT_REALS + (0.0,),
          "lam": NOT_REALS + (0.0,), "kind": ("x",), "steps": NOT_INTS + (-1,) + HUGE_SIZES, "tol": NOT_NONE_REALS + (0.0,),
          "fstar": NOT_REALS, "eps": NOT_REALS + (-1.0,), "separable": ("no",)}),
        (PC.iters_to_tol, {"trace": PC.npgd(pp.f, pp.grad, pp.x0, 0.1, 0.1, steps=2), "tol": 1e-3},
         {"trace": (None, [1.0]), "tol": NOT_REALS + (0.0,), "fstar": NOT_REALS}),
        (PC.theory_steps, {"problem": pp, "kind": "smooth_clip"}, {"problem": (None,), "kind": ("identity", None)}),
        (PC.gd_best_step, {"problem": pp, "max_steps": 3, "grid_max": 2},
         {"problem": (None,), "tol": NOT_REALS + (0.0,), "max_steps": NOT_INTS + (-1,) + HUGE_SIZES,
          "grid_max": NOT_INTS + (-10, 10**6)}),
        (PC.gd_armijo, {"problem": pp, "max_steps": 3},
         {"problem": (None,), "tol": NOT_REALS + (0.0,), "max_steps": NOT_INTS + (-1,) + HUGE_SIZES, "t0": NOT_REALS + (0.0,),
          "beta": (NAN, 0.0, 1.0, "0.5", None), "c": (NAN, 1.0, "x"), "max_halvings": NOT_INTS + (0,)}),
        (PC.torch_clip_sgd_step, {"x": np.ones(2), "g": np.ones(2), "gamma": 0.1, "lam": 1.0, "shapes": [(2,)]},
         {"x": (np.ones(3), np.full(2, NAN), None), "g": (np.ones((1, 2)), [INF, 0.0]), "gamma": NOT_REALS + (0.0,),
          "lam": NOT_REALS + (0.0,), "shapes": ([], [(3,)], [(-1, -2)], [(2.0,)], None)}),
        (PC.clip_equivalence, {"n_cases": 2}, {"n_cases": NOT_INTS + (0, -1), "seed": (-1, None)}),
        (PC.speedup, {"gd_iters": 10.0, "iters": 2.0}, {"gd_iters": (NAN, -1.0, "x", None), "iters": (NAN, -1.0, "x")}),
        (PC.speed_comparison, {"problem": pp, "gd_max_steps": 3, "npgd_max_steps": 3},
         {"problem": (None,), "tol": NOT_REALS + (0.0,), "gd_max_steps": NOT_INTS + (-1,), "npgd_max_steps": NOT_INTS + (-1,)}),
        (PC.monotonicity, {"problem": pp, "steps": 3}, {"problem": (None,), "steps": NOT_INTS + (-1,) + HUGE_SIZES}),
        (PC.mlp_digits_demo, {"steps": 1}, {"lr": NOT_REALS + (0.0,), "lam": NOT_REALS + (0.0,), "steps": NOT_INTS + (0,) + HUGE_SIZES,
                                            "seed": (-1,)}),
        # hclust (the oracle cells)
        (HC.SplittingOracle, {"tree": Z}, {"tree": (None, Z[:3], "x"), "p_err": (NAN, -0.1, 0.5, "x", None, True),
                                           "persistent": ("yes", None), "seed": (-1, None)}),
        (HC.DataTripletOracle, {"W": W}, {"W": (None, W[:3], -W), "similarity": ("cos", None), "hops": NOT_INTS + (0, 65),
                                          "seed": (-1,)}),
        (oracle.query_many, {"u": [0, 1], "v": [1, 2], "w": [2, 3]},
         {"u": ([0.5, 1], [-1, 1], [8, 1], "x", None, [NAN, 1]), "v": ([1, 2, 3],), "w": ([2, 3, 4], [1, 2])}),
        (oracle.query, {"u": 0, "v": 1, "w": 2}, {"u": (0.5, -1, 8, "0", None), "w": (1,)}),
        (oracle.count_votes, {"pairs": [[0, 1]], "witnesses": [[2, 3]]},
         {"pairs": ([[0.5, 1]], [[0, 8]], [[-1, 1]], [0, 1], [[0, 1, 2]], None), "witnesses": ([[2.5, 3]], [[9, 3]], [2, 3], [[2], [3]])}),
        (HC.oracle_hc_dasgupta, {"oracle": oracle}, {"oracle": (None, W), "anchors": NOT_INTS + (2,), "votes": NOT_INTS + (0,) + HUGE_SIZES,
                                                      "leaf_size": NOT_INTS + (2,), "seed": (-1,)}),
        (HC.oracle_hc_mw, {"oracle": oracle}, {"oracle": ("o",), "anchors": NOT_INTS + (2,), "votes": NOT_INTS + (0,) + HUGE_SIZES,
                                               "leaf_size": (NAN, "3", 2.5, 2), "seed": (-1,)}),
        (FD.excess_nll, {"model": net, "cfg": dict(data_scale=1.0, n_test=4, ll_steps=1), "seed": 0},
         {"cfg": (None, {}, dict(data_scale=0.0, n_test=4, ll_steps=1), dict(data_scale=1.0, n_test=0, ll_steps=1)),
          "seed": (-1, None)}),
        (GR.grok_ratio, {"times": (3, 30)}, {"times": (None, (1,), ("1", 2), (1.5, 2), (-1, 2), "ab")}),
        (FD.cfm_loss, {"model": net, "ps": FD.AffinePath().sample(torch.zeros(3, 2), torch.ones(3, 2), torch.full((3,), 0.5))}, {}),
        (FD.divergence_residual, {"model": net, "ps": FD.AffinePath().sample(torch.zeros(3, 2), torch.ones(3, 2),
                                                                              torch.full((3,), 0.5))}, {}),
    ]
    return cases


def _name(fn):
    return getattr(fn, "__qualname__", getattr(fn, "__name__", str(fn)))


SWEEP = _sweep_cases()


@pytest.mark.parametrize("fn, good, bad", SWEEP, ids=[_name(c[0]) for c in SWEEP])
def test_hostile_inputs_refused(fn, good, bad):
    "The good call is clean; every bad value of every argument is refused with a one-line error naming it."
    if fn is CO.outer_product:  # positional vectors
        assert outcome(CO.outer_product, [1.0, 2.0], [3.0])[0] == "ok"
        for v in (None, "x", [NAN], [[1.0]], [INF, 1.0]):
            assert_refused(CO.outer_product, [1.0, 2.0], v, name="vecs")
        assert_refused(CO.outer_product, name="vecs")
        return
    if fn is CP.law_curves:
        return  # covered by test_law_curves below (it needs a trained run)
    if fn in (LL.local_reference, LL.run_diagnostics):  # NaN by design: an uncertified dual, a Hessian not computed
        fn(**good)
    else:
        kind, val = outcome(fn, timeout=60, **good)
        assert kind == "ok", f"{_name(fn)} refused its good call: {val}"
    # an argument whose error names a dotted or indexed form (task.labels, pairs entries) still names it
    _refuses_each(fn, good, bad)


def _refuses_each(fn, good, bad):
    "fuzzutil.refuses_each for functions that have an argument called `name` (called through a closure)."
    for arg, values in bad.items():
        for v in values:
            assert_refused(lambda: fn(**{**good, arg: v}), name=arg, timeout=30)


def test_coopetition_runs_named():
    "A bad entry of a run is refused naming the entry (mu1, shared, freeze)."
    good = dict(steps=2, dims=(2, 2, 2, 2))
    for run, name in ((dict(mu1=NAN), "mu1"), (dict(alpha="0.1"), "alpha"), (dict(shared="no"), "shared"),
                      (dict(freeze=("e",)), "freeze"), (dict(freeze=(("a", 5),)), "freeze"), (dict(freeze=(("a", 1.5),)), "freeze")):
        assert_refused(CO.train_coopetition_batch, [run], name=name, **good)


def test_law_curves():
    lrs = CP.schedule_lrs("constant", 4, 1e-3)
    run = CP.train_pt_cpt(CP.TinyLM(8, 1, 2, 4, 5), np.arange(60) % 5, np.arange(60) % 5, {"v": np.arange(60) % 5},
                          lrs, {"c": (lrs, 0.0)}, batch_size=2, eval_every=2)
    assert outcome(CP.law_curves, run, "v", 0.9)[0] == "ok"
    refuses_each(CP.law_curves, dict(run=run, val_name="v", lam=0.9),
                 {"run": (None, {}, {"pt": run["pt"]}), "val_name": ("w", None), "lam": (1.0, NAN, "x"),
                  "names": (["z"],), "skip_frac": NOT_REALS + (-0.1, 1.5), "pt_warmup": NOT_INTS + (-1, 99)})


def test_functions_covered():
    "Every public function and class of the eight modules is exercised by the sweep or a defect case."
    mods = (CR, FD, CO, CP, GR, LL, PC, HC)
    covered = {_name(c[0]).split(".")[0] for c in SWEEP} | {"law_curves", "grok_ratio", "band_excess", "ExemplarTask",
                                                             "CSProblem", "NuclearSolution", "Trace", "TestProblem",
                                                             "PathSample", "is_sosp", "classify_run", "is_loud",
                                                             "is_undecided", "npgd_torch_step", "fdm_gain",
                                                             "experiment", "plots", "calibrate_patch_size"}
    # dasgupta_cost and what it calls belong to the hclust kernel's suite; the other functions of its cell and of
    # the hsbm cell are swept in test_hclust_generators (their input checks are left to that owner: see the report)
    skip = {"check_weights", "dasgupta_cost", "mw_revenue", "lca_sizes", "level_probabilities", "weak_top_probabilities",
            "expected_weights", "hsbm", "optimal_dasgupta_cost", "average_linkage", "spectral_sparsest_cut"}
    missing = []
    for m in mods:
        for name in m.__all__:
            obj = getattr(m, name)
            if callable(obj) and not isinstance(obj, type(CR.CHAPTER)) and name not in covered | skip:
                missing.append(f"{m.__name__}.{name}")
    assert not missing, missing


def test_npgd_torch_step_and_classifiers():
    p = torch.nn.Parameter(torch.ones(3))
    (p * p).sum().backward()
    assert outcome(PC.npgd_torch_step, [p], 0.1, 1.0)[0] == "ok"
    refuses_each(PC.npgd_torch_step, dict(params=[p], gamma=0.1, lam=1.0),
                 {"gamma": NOT_REALS + (0.0,), "lam": NOT_REALS + (0.0,), "kind": ("arcsinh", None), "params": (None, [], [3])})
    sp = _sensing()
    opt = LL.solve_nuclear(sp, 0.1)
    A, B = LL.balanced_factors(opt.X, 2)
    assert LL.classify_run(A, B, sp, 0.1, opt) in LL.LABELS
    refuses_each(LL.classify_run, dict(A=A, B=B, problem=sp, lam=0.1, optimum=opt),
                 {"optimum": (None,), "lam": (NAN, -1.0), "gap_tol": NOT_REALS, "loud_factor": (NAN, "1")})


# ---------------------------------------------------------------------------------------------------------------
# 3. Property-based: equivalent inputs give the float64 answer; random valid inputs give finite answers.
# ---------------------------------------------------------------------------------------------------------------
def _f32(a):
    "`a` rounded to float32 values (held in float64), so that a float32 copy is the same input."
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def _variants(a):
    "float32, non-contiguous and list versions of a float64 array of float32-representable values."
    a = np.asarray(a, dtype=np.float64)
    assert np.array_equal(a.astype(np.float32), a)
    return [a.astype(np.float32), non_contiguous(a), a.tolist()]


finite = st.floats(-4, 4, allow_nan=False, width=32)


@settings(max_examples=15)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(3, 5), st.integers(3, 5)), elements=finite),
       st.sampled_from([1, 3]), st.floats(0.05, 0.95))
def test_creativity_equivalent_inputs(x, k, t):
    x = _f32(x + np.arange(x[0].size).reshape(x.shape[1:]) * 1e-3)  # no constant image
    train = _f32(np.flip(x, 0) + 0.5)
    ref = (CR.els_denoiser(x, t, train, k), CR.ideal_denoiser(x, t, train), CR.image_patches(x, k), CR.r2(x, train),
           CR.nearest_train_distance(x, train)[0])
    assert np.isfinite(ref[0]).all() and np.isfinite(ref[3]).all()
    for xv, tv in zip(_variants(x), _variants(train)):
        got = (CR.els_denoiser(xv, np.float32(t) if isinstance(xv, list) else t, tv, k), CR.ideal_denoiser(xv, t, tv),
               CR.image_patches(xv, k), CR.r2(xv, tv), CR.nearest_train_distance(xv, tv)[0])
        assert all(same(r, g, rtol=1e-6, atol=1e-9) for r, g in zip(ref, got))


@settings(max_examples=15)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 6), st.just(2)), elements=st.floats(-3, 3, width=32)),
       st.sampled_from(FD.DATASETS), st.floats(0.5, 2.0))
def test_flowdiv_densities_equivalent_inputs(xy, name, scale):
    ref = FD.density_2d(name, xy)
    ref_cb = FD.checkerboard_density(xy, scale)
    assert np.isfinite(ref).all() and (ref >= 0).all()
    for v in _variants(xy):
        assert same(FD.density_2d(name, v), ref) and same(FD.checkerboard_density(v, scale), ref_cb)
    with pytest.raises(ValueError, match="xy"):
        FD.density_2d(name, np.c_[xy, xy[:, :1]])  # a third column is refused, never read as a 2-D point


vec = hnp.arrays(np.float64, st.integers(1, 3), elements=st.floats(-2, 2, width=32))


@settings(max_examples=20)
@given(vec, vec, vec, vec, st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_coopetition_equivalent_inputs(a, b, c, d, mu1, mu2, alpha):
    p = dict(a=a, b=b, c=c, d=d)
    t = {k: v[::-1] + 0.25 for k, v in p.items()}
    ref = (CO.coopetition_loss(p, t, mu1, mu2, alpha), CO.coopetition_grad(p, t, mu1, mu2, alpha), CO.outer_product(a, b, c))
    for variant in range(3):
        pv = {k: _variants(v)[variant] for k, v in p.items()}
        got = (CO.coopetition_loss(pv, t, mu1, mu2, alpha), CO.coopetition_grad(pv, t, mu1, mu2, alpha),
               CO.outer_product(*(pv[k] for k in "abc")))
        assert all(same(r, g) for r, g in zip(ref, got))
    s = np.cumsum(np.abs(a)) / (1 + np.abs(a).sum())
    tr = CO.transience(s, s[::-1])
    assert not any(isinstance(v, float) and math.isnan(v) for v in tr.values())
    assert same(CO.emergence_step(s, 0.3), CO.emergence_step(s.tolist(), 0.3))


@settings(max_examples=20)
@given(hnp.arrays(np.float64, st.integers(2, 8), elements=st.floats(0, 1, width=32)), st.floats(0.5, 0.99))
def test_cpt_equivalent_inputs(lrs, lam):
    lrs = _f32(lrs + 1e-3)
    ref = CP.law_areas(lrs, lrs[::-1], lam)
    for v in _variants(lrs):
        got = CP.law_areas(v, lrs[::-1], lam)
        assert same(ref, got)
    th = np.array([1.0, 0.5, 0.3, 0.1, 0.1, 0.2, 1.0, 0.5])
    ref = {k: v for k, v in ref.items()}
    S = _f32(ref["S1pt"] + 0.1)
    law = CP.cpt_law(th, S, ref["S1cpt"], ref["S2pt"], ref["S2cpt"])
    assert np.isfinite(law).all()
    for v in _variants(S):
        assert same(CP.cpt_law(th, v, ref["S1cpt"], ref["S2pt"], ref["S2cpt"]), law)


@settings(max_examples=20)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 4)), elements=st.floats(-3, 3, width=32)),
       st.floats(0, 2))
def test_lora_matrix_functions_equivalent_inputs(X, tau):
    ref = (LL.nuclear_norm(X), LL.effective_rank(X), LL.svt(X, tau), LL.factor_penalty(X, X))
    for v in _variants(X):
        got = (LL.nuclear_norm(v), LL.effective_rank(v), LL.svt(v, tau), LL.factor_penalty(v, v))
        assert all(same(r, g, rtol=1e-9, atol=1e-9) for r, g in zip(ref, got))
    A, B = LL.balanced_factors(X)
    assert np.allclose(A @ B.T, X, atol=1e-9) and np.isclose(LL.factor_penalty(A, B), ref[0], atol=1e-9)


@settings(max_examples=20)
@given(hnp.arrays(np.float64, st.integers(1, 4), elements=st.floats(-3, 3, width=32)),
       st.sampled_from(PC.DUAL_MAPS), st.sampled_from([None, True, False]))
def test_precond_equivalent_inputs(y, kind, separable):
    m = PC.dual_map(kind, separable=separable)
    ref = m(y)
    assert np.isfinite(ref).all()
    for v in _variants(y):
        assert same(m(v), ref)
    c = np.zeros(len(y))
    for make in (PC.quartic, PC.cosh_norm):
        prob, probv = make(c, y), make(c.tolist(), _variants(y)[1])
        assert same(prob.f(y), probv.f(y)) and same(prob.x0, probv.x0)


@settings(max_examples=15)
@given(st.integers(0, 2**32), st.integers(3, 6))
def test_hclust_oracle_equivalent_ids(seed, k):
    _, Z = _hier()
    o = HC.SplittingOracle(Z, 0.2, seed=seed)
    rng = np.random.default_rng(seed)
    T = np.array([rng.choice(8, 3, replace=False) for _ in range(k)])
    ref = o.query_many(*T.T)
    assert set(np.unique(ref)) <= set(T.ravel())
    for variant in (T.astype(np.float64), T.astype(np.int32), T.tolist()):
        got = o.query_many(*(np.asarray(variant).T if not isinstance(variant, list) else list(zip(*variant))))
        assert np.array_equal(got, ref)


@settings(max_examples=10)
@given(st.integers(0, 1000))
def test_grokking_random_instances(seed):
    p = GR.cs_problem(12, 2, 6, seed=seed)
    tr = GR.ista(p.X, p.y, 1e-3, iters=20, a_star=p.a_star, points=5)
    assert np.isfinite(tr["train"]).all() and np.isfinite(tr["test"]).all()
    tr2 = GR.ista(p.X.astype(np.float32).astype(np.float64).tolist(), p.y, 1e-3, iters=20,
                  a_star=non_contiguous(p.a_star), points=5)
    tr3 = GR.ista(p.X.astype(np.float32).astype(np.float64), p.y, 1e-3, iters=20, a_star=p.a_star, points=5)
    assert same(tr2, tr3)
    M, mask = GR.mc_problem(5, 1, 0.7, seed=seed)
    out = GR.nuclear_prox(M, mask, 0.05, 4, 3)
    assert np.isfinite(out["train"]).all() and np.isfinite(out["test"]).all()
    assert same(out, GR.nuclear_prox(non_contiguous(M), mask.astype(int).tolist(), 0.05, 4, 3))


def test_hclust_generators_left_to_the_kernel_owner():
    """The functions of the two hclust cells that hold dasgupta_cost (check_weights ... hsbm, optimal_dasgupta_cost)
    belong to the hclust kernel's owner; what a hostile user gets from them today, recorded so that a fix shows up:
    every case either refuses cleanly or is listed in the report as left alone."""
    for call in (lambda: HC.lca_sizes(np.array([[0, 5, 1, 2.0]])), lambda: HC.hsbm(0), lambda: HC.hsbm(3, q_min=NAN),
                 lambda: HC.optimal_dasgupta_cost(np.ones((13, 13)))):
        assert outcome(call)[0] == "refused"
