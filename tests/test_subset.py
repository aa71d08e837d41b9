"""supervised/subset (RAM-APL): the scores against the authors' definitions, the rules' budgets and invariances, the
baselines, the evaluator, plots from the module alone, and bad input named in the errors. The experiment itself runs
in tests/test_chapters.py (twice, seed 1) and in the notebook (seed 0)."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from icml25nb.supervised import subset as S


@pytest.fixture(scope="module")
def fine():
    task = S.load_digits_task("fine", seed=2)
    return task, S.extract_features(task["images_train"])


def _blobs(n_per, classes, dims, seed):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(classes), n_per)
    return [rng.normal(size=(classes, d))[y] * 2 + rng.normal(size=(len(y), d)) for d in dims], y


def test_loader_splits_and_variants():
    p, f = S.load_digits_task("plain", 0), S.load_digits_task("fine", 0)
    assert len(p["y_train"]) + len(p["y_test"]) == 1797 and p["X_train"].shape[1] == 64
    assert f["classes"].tolist() == list(S.FINE_CLASSES) and set(f["y_test"]) == set(range(6))
    assert p["X_train"].min() >= 0 and p["X_train"].max() <= 1
    # stratified: every class keeps its share in train
    share = np.bincount(p["y_train"]) / np.bincount(np.concatenate([p["y_train"], p["y_test"]]))
    assert np.all(np.abs(share - 0.6) < 0.02)
    assert not np.array_equal(S.load_digits_task("plain", 1)["y_train"], p["y_train"])


def test_shapes_pretraining_learns_and_is_cached():
    net = S.pretrained_shapes_cnn()
    assert net is S.pretrained_shapes_cnn() and net.train_accuracy > 0.8
    imgs, lab = S.draw_shapes(200, seed=3)
    with torch.no_grad():
        acc = float((net(torch.tensor(imgs[:, None], dtype=torch.float32)).argmax(1).numpy() == lab).mean())
    assert acc > 0.7  # new drawings, never seen: it learned the shapes, not the images
    assert torch.get_num_threads() >= 1


def test_apl_counts_wrong_extractors_and_ram_is_rank_mean():
    F, y = _blobs(20, 3, (4, 6), 0)
    F[1][0] = F[1][y == 2].mean(0)  # sample 0 (class 0) sits on class 2's prototype in extractor 1 only
    apl = S.apl_scores(F, y)
    assert apl[0] == 0.5 and set(np.unique(apl)) <= {0.0, 0.5, 1.0}
    ram = S.ram_scores(F, y)
    for c in range(3):
        r = ram[y == c] * 20 * 2  # the sum of the two extractors' ranks
        assert np.allclose(r, np.round(r)) and r.min() >= 0 and r.max() <= 2 * 19
    single = S.ram_scores([F[0]], y)
    assert np.array_equal(np.sort(single[y == 1] * 20), np.arange(20))  # one extractor: the ranks 0..N_c-1


@pytest.mark.parametrize("rate", [0.01, 0.1, 0.37, 1.0])
def test_budgets_and_balance(fine, rate):
    task, feats = fine
    y = task["y_train"]
    budgets = S.class_budgets(y, rate)
    assert budgets == {c: round(rate * int((y == c).sum())) for c in range(6)}
    for idx in (S.ram_apl_select(feats, y, rate), S.random_select(y, rate, 1), S.kcenter_greedy_select(feats, y, rate),
                S.moderate_select(feats, y, rate)):
        assert idx.dtype == np.int64 and np.all(np.diff(idx) > 0)
        assert {c: int((y[idx] == c).sum()) for c in range(6)} == budgets
    if rate == 1.0:
        assert np.array_equal(S.ram_apl_select(feats, y, 1.0), np.arange(len(y)))


def test_ram_apl_keeps_the_smallest_scores_and_prefers_correct_pseudo_labels(fine):
    task, feats = fine
    y = task["y_train"]
    idx = S.ram_apl_select(feats, y, 0.1)
    w1, w2 = S.rate_weights(0.1)
    s = w1 * S.ram_scores(feats, y) + w2 * S.apl_scores(feats, y)
    for c in range(6):
        kept = np.zeros(len(y), bool)
        kept[idx] = True
        m = y == c
        assert s[m & kept].max() <= s[m & ~kept].min()  # nothing left behind scores lower
    assert S.apl_scores(feats, y)[idx].mean() < S.apl_scores(feats, y).mean()
    # the largest scores would be the opposite rule (the brief's first pitfall): disjoint at 10%
    assert len(np.intersect1d(idx, np.argsort(-s)[:len(idx)])) == 0


def test_permutation_invariance_with_ties_and_seeded_last_resort():
    # two extractors with integer features: many equal scores and distances
    rng = np.random.default_rng(4)
    y = np.repeat([0, 1], 30)
    F = [rng.integers(0, 3, (60, 2)).astype(float) for _ in range(2)]
    perm = rng.permutation(60)
    for seed in (0, 1):
        a = S.ram_apl_select(F, y, 0.2, seed)
        b = np.sort(perm[S.ram_apl_select([G[perm] for G in F], y[perm], 0.2, seed)])
        # exact duplicates are interchangeable: compare the selected rows' contents (multisets), per class
        rows = lambda idx: sorted(map(tuple, np.hstack([G[idx] for G in F] + [y[idx, None]]).tolist()))
        assert rows(a) == rows(b)


def test_baselines_are_the_authors_rules(fine):
    task, feats = fine
    y = task["y_train"]
    Z = S.concat_features(feats)
    assert np.allclose((Z ** 2).sum(1).mean(), len(feats), rtol=1e-9)  # each block: unit expected squared norm
    with pytest.raises(ValueError, match="features_list"):
        S.concat_features([Z, Z[:-1]])
    # k-center picks of a class cover it better than random ones of the same size
    idx = S.kcenter_greedy_select(feats, y, 0.05, seed=1)
    rnd = S.random_select(y, 0.05, seed=1)
    def radius(sel, c):
        m = np.flatnonzero(y == c)
        chosen = sel[y[sel] == c]
        return ((Z[m][:, None] - Z[chosen][None]) ** 2).sum(-1).min(1).max()
    assert sum(radius(idx, c) < radius(rnd, c) for c in range(6)) >= 5
    # moderate: the middle band of distances to the class median
    mid = S.moderate_select(feats, y, 0.2)
    m = np.flatnonzero(y == 0)
    d = np.linalg.norm(Z[m] - np.median(Z[m], 0), axis=1)
    kept = np.isin(m, mid)
    assert d[kept].min() > np.sort(d)[0] and d[kept].max() < np.sort(d)[-1]


def test_extract_features_takes_one_name_or_several(fine):
    task, feats = fine
    one = S.extract_features(task["images_train"], "pca")
    assert len(one) == 1 and np.allclose(one[0], feats[1])
    assert [F.shape[1] for F in S.extract_features(task["images_train"][:7], ["hog", "random_conv"])] == [324, 144]


def test_evaluate_subset_models(fine):
    task, _ = fine
    X, y, Xt, yt = task["X_train"], task["y_train"], task["X_test"], task["y_test"]
    idx = S.random_select(y, 0.2, 0)
    a = S.evaluate_subset(X, y, idx, "mlp", 3, X_test=Xt, y_test=yt)
    assert a == S.evaluate_subset(X, y, idx, "mlp", 3, X_test=Xt, y_test=yt) and a > 0.8
    assert S.evaluate_subset(X, y, idx, "logreg", X_test=Xt, y_test=yt) > 0.8
    from sklearn.neighbors import KNeighborsClassifier
    knn = KNeighborsClassifier(1)
    assert S.evaluate_subset(X, y, idx, knn, X_test=Xt, y_test=yt) > 0.8 and not hasattr(knn, "classes_")


def test_plots_headless_from_the_module_alone():
    code = ("import os, numpy as np, matplotlib; from icml25nb.supervised import subset as S\n"
            "cfg = dict(S.SCALE_CONFIG['fast'], rates=(0.02, 0.1), random_draws=1)\n"
            "class B:\n    def update(self, k): pass\n"
            "res = {v: S._run_variant(v, cfg, 0, B()) for v in ('plain', 'fine')}\n"
            "figs = S.plots(res); assert set(figs) == {'gain_over_random'}; print(matplotlib.get_backend())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "ICML25NB_PROGRESS": "0"})
    assert out.returncode == 0, out.stderr[-2000:]


def test_bad_input_is_named(fine):
    task, feats = fine
    y = task["y_train"]
    cases = [
        (lambda: S.load_digits_task("plain", -1), "seed"),
        (lambda: S.load_digits_task("plain", 0, test_fraction=1.5), "test_fraction"),
        (lambda: S.load_digits_task("plain", 0, label_noise=-0.1), "label_noise"),
        (lambda: S.ram_apl_select(feats, y, 1.5), "rate"),
        (lambda: S.ram_apl_select(feats, y, -0.1), "rate"),
        (lambda: S.ram_apl_select([], y, 0.1), "features_list"),
        (lambda: S.ram_apl_select(feats, y.astype(float) + 0.5, 0.1), "y"),
        (lambda: S.ram_apl_select(feats, "abc", 0.1), "y"),
        (lambda: S.ram_apl_select([f.copy() for f in feats[:1]] + [np.full_like(feats[1], np.nan)], y, 0.1),
         r"features_list\[1\]"),
        (lambda: S.ram_apl_select(feats, y, 0.1, seed=-3), "seed"),
        (lambda: S.rate_weights(0.1, a=2.0), "a"),
        (lambda: S.random_select(y, 0, 1), "rate"),
        (lambda: S.kcenter_greedy_select(feats, y[:10], 0.1), "features_list"),
        (lambda: S.pca_features(task["images_train"], n_components=0), "n_components"),
        (lambda: S.draw_shapes(0), "n"),
        (lambda: S.experiment("huge"), "scale"),
        (lambda: S.evaluate_subset(task["X_train"], y, [0, 1]), "X_test"),
        (lambda: S.evaluate_subset(np.full_like(task["X_train"], np.nan), y, [0, 1], X_test=task["X_test"],
                                   y_test=task["y_test"]), "X must be finite"),
        (lambda: S.evaluate_subset("abc", y, [0, 1], X_test=task["X_test"], y_test=task["y_test"]), "X must be"),
        (lambda: S.evaluate_subset(task["X_train"], y, [0, 1], X_test=task["X_test"][:, :5], y_test=task["y_test"]),
         "X_test"),
        (lambda: S.random_select(feats, y, 0.1), "y must be the labels"),
        (lambda: S.extract_features(task["images_train"], "clip"), "names"),
    ]
    for fn, name in cases:
        with pytest.raises((ValueError, TypeError), match=name):
            fn()
