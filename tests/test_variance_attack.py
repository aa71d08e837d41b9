"""The variance_attack chapter beyond its notebook: PGD's projection and determinism, the losses' directions on a real
(tiny) VAE, ASPL's alternation, the transfer pipeline's shape checks, the metrics, and bad input (each public entry
point refuses it with an error naming the argument). Tiny models only; the experiment itself runs in
tests/test_chapters.py and the notebook."""
import numpy as np
import pytest
import torch

from fuzzutil import BAD_NUMBERS, HUGE_SIZES, assert_refused, refuses_each
from icml25nb.generative import variance_attack as V


@pytest.fixture(scope="module")
def tiny():
    images, labels = V.load_identities(32)
    small = images[:96]
    vae = V.train_vae(small, width=4, latent_channels=2, epochs=1, seed=0)
    ldm = V.train_ldm(vae, small, steps=5, hidden=16, T=10, seed=0)
    return images, labels, small, vae, ldm


def test_pgd_is_deterministic_and_projects(tiny):
    _, _, small, vae, _ = tiny
    x = small[:3]
    a = V.pgd_attack(x, lambda xa: V.loss_la(vae, xa), eps=8 / 255, steps=5, seed=4)
    b = V.pgd_attack(x, lambda xa: V.loss_la(vae, xa), eps=8 / 255, steps=5, seed=4)
    c = V.pgd_attack(x, lambda xa: V.loss_la(vae, xa), eps=8 / 255, steps=5, seed=5)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert (a - x).abs().max() <= 8 / 255 + 1e-7 and a.min() >= 0 and a.max() <= 1
    # zero budget: the image itself; zero steps: the random start
    assert torch.equal(V.pgd_attack(x, lambda xa: xa.sum(), eps=0.0, steps=3), x)
    out, saved = V.pgd_attack(x, lambda xa: xa.sum(), steps=0, seed=1, checkpoints=(0,))
    assert torch.equal(out, saved[0])


def test_variance_losses_raise_the_variance_and_mean_attack_moves_the_mean(tiny):
    _, _, small, vae, _ = tiny
    x = small[10:14]
    v0 = V.posterior_variance(vae, x)
    for loss in (V.loss_la, V.loss_le):
        adv = V.pgd_attack(x, lambda xa: loss(vae, xa), eps=16 / 255, steps=20, seed=0)
        assert V.posterior_variance(vae, adv) > v0  # ascent on a monotone function of the variance
    adv = V.pgd_attack(x, lambda xa: -V.loss_la(vae, xa), eps=16 / 255, steps=20, seed=0)
    assert V.posterior_variance(vae, adv) < v0  # and descent lowers it: the sign matters
    mu0 = vae.encode(x)[0]
    adv = V.pgd_attack(x, lambda xa: V.loss_encoder_mean(vae, xa, x), eps=16 / 255, steps=20, seed=0)
    rnd = V.pgd_attack(x, lambda xa: 0 * xa.sum(), eps=16 / 255, steps=20, seed=0)  # sign(0) = 0: the start only
    assert ((vae.encode(adv)[0] - mu0) ** 2).mean() > ((vae.encode(rnd)[0] - mu0) ** 2).mean()


def test_le_lagrange_term_pushes_back_above_the_cap():
    lv = torch.tensor([[18.0, 19.5]], requires_grad=True)

    class Fixed:
        def encode(self, x):
            return torch.zeros_like(lv), lv

    (g,) = torch.autograd.grad(V.loss_le(Fixed(), None, cap=19.0, lam=2.0), lv)
    assert g[0, 0] > 0 and g[0, 1] < 0  # below the cap: up; above: the multiplier wins


def test_aspl_alternates_surrogate_and_model(tiny, monkeypatch):
    _, _, small, vae, ldm = tiny
    calls = []
    real = V.personalize

    def spy(m, v, imgs, steps, lr, seed, reps=8):
        calls.append((steps, bool(torch.equal(imgs, small[:2]))))
        return real(m, v, imgs, steps, lr, seed, reps)

    monkeypatch.setattr(V, "personalize", spy)
    adv = V.aspl_attack(small[:2], ldm, vae, steps=6, adv_steps=3, surrogate_steps=2, seed=0)
    # round 1: surrogate on the clean images; round 2: the model on the perturbed ones, then the surrogate on clean
    assert calls == [(2, True), (2, False), (2, True)]
    assert (adv - small[:2]).abs().max() <= 8 / 255 + 1e-7


def test_personalised_model_learns_its_images(tiny):
    "Fine-tuning on one image lowers the denoising loss on that image's latents (same noise and steps), not on others'."

    def dloss(m, img):
        z0 = vae.sample_latent(img.repeat(256, 1, 1, 1), torch.Generator().manual_seed(1)).flatten(1) * m.scale
        with torch.no_grad():
            return float(m.loss(z0, torch.Generator().manual_seed(2)))

    images = tiny[0]
    vae = V.train_vae(images[:400], width=8, latent_channels=2, epochs=4, seed=0)  # a narrow posterior, as trained
    ldm = V.train_ldm(vae, images[:400], steps=5, hidden=64, T=10, seed=0)
    x, other = images[:1], images[50:51]
    tuned = V.personalize(ldm, vae, x, steps=150, lr=3e-3, seed=0, reps=32)
    assert dloss(tuned, x) < 0.9 * dloss(ldm, x)
    assert dloss(tuned, x) < dloss(tuned, other)


def test_transfer_needs_matching_latents(tiny):
    _, _, small, vae, ldm = tiny
    vae_b = V.KLVAE(width=4, latent_channels=3)
    with pytest.raises(ValueError, match="latents of shape"):
        V.personalize(ldm, vae_b, small[:2])
    with pytest.raises(ValueError, match="latents of shape"):
        V.generate(ldm, vae_b, 2)
    with pytest.raises(TypeError, match="vae must be"):
        V.generate(ldm, "vae", 2)


def test_metrics(tiny):
    images, labels, _, vae, _ = tiny
    rng = np.random.default_rng(0)
    noise = torch.tensor(rng.random((20, 1, 32, 32)), dtype=torch.float32)
    assert V.noise_score(noise) > 50 * V.noise_score(images[:20])
    clf = V.IdentityClassifier(images[:600], labels[:600])
    assert V.identity_retention(images[600:700][labels[600:700] == 4], clf, 4) > 0.8
    assert V.identity_retention(images[600:700][labels[600:700] == 4], clf, 7) < 0.2


def test_bad_input_is_refused(tiny):
    images, labels, small, vae, ldm = tiny
    bad_images = [torch.zeros(2, 1, 30, 30), torch.full((2, 1, 32, 32), 2.0), torch.full((2, 1, 32, 32), float("nan")),
                  torch.zeros(0, 1, 32, 32), "images", None, torch.zeros(2, 32, 32)]
    refuses_each(V.train_vae, dict(images=small[:8], epochs=1, width=2),
                 dict(images=bad_images, epochs=[0, -1, *BAD_NUMBERS], width=[0, 1, *BAD_NUMBERS],
                      beta=[-1.0, *BAD_NUMBERS], lr=[0.0, *BAD_NUMBERS], seed=[-1, 2.5, "0"]))
    refuses_each(V.train_ldm, dict(vae=vae, images=small[:8], steps=1, hidden=4),
                 dict(images=bad_images, steps=[0, *BAD_NUMBERS], hidden=[0, *BAD_NUMBERS], T=[1, *BAD_NUMBERS]))
    refuses_each(V.personalize, dict(ldm=ldm, vae=vae, images=small[:2], steps=1),
                 dict(images=bad_images, steps=[-1, *BAD_NUMBERS], lr=[0.0, *BAD_NUMBERS], reps=[0, *BAD_NUMBERS]))
    refuses_each(V.generate, dict(ldm=ldm, vae=vae, n=2), dict(n=[0, *BAD_NUMBERS, *HUGE_SIZES], seed=[-1, 1.5]))
    refuses_each(V.pgd_attack, dict(x=small[:2], loss_fn=lambda xa: xa.sum(), steps=1),
                 dict(x=bad_images, eps=[-0.1, 1.5, *BAD_NUMBERS], alpha=[-0.1, *BAD_NUMBERS],
                      steps=[-1, *BAD_NUMBERS, *HUGE_SIZES], loss_fn=[None, 3], checkpoints=[(5,), (-1,), ("a",)]))
    refuses_each(V.aspl_attack, dict(x=small[:2], ldm=ldm, vae=vae, steps=1),
                 dict(x=bad_images, adv_steps=[0, *BAD_NUMBERS], surrogate_steps=[-1, *BAD_NUMBERS],
                      lr=[0.0, *BAD_NUMBERS], ldm=["m"], vae=[None]))
    refuses_each(V.loss_le, dict(vae=vae, x_adv=small[:2]), dict(cap=list(BAD_NUMBERS[:3]), lam=[-1.0, *BAD_NUMBERS]))
    refuses_each(V.loss_pid, dict(vae=vae, x_adv=small[:2], x_clean=small[:2]),
                 dict(x_clean=[small[:1], small[:3], "x", None], vae=[None, "vae"]))
    refuses_each(V.loss_encoder_mean, dict(vae=vae, x_adv=small[:2], x_clean=small[:2]),
                 dict(x_clean=[small[:1], None], target=[torch.zeros(1, 2, 8, 8), "t"]))
    refuses_each(V.loss_la, dict(vae=vae, x_adv=small[:2]), dict(vae=[None, 3]))
    refuses_each(V.loss_aspl, dict(ldm=ldm, vae=vae, x_adv=small[:2]), dict(ldm=[None], vae=[None]))
    refuses_each(V.personalize, dict(ldm=ldm, vae=vae, images=small[:2], steps=1),
                 dict(variance_factor=[-1.0, 1e13, *BAD_NUMBERS]))
    refuses_each(V.IdentityClassifier, dict(images=images[:50], labels=labels[:50], noise_images=small[:5]),
                 dict(noise_images=bad_images[:4]))
    refuses_each(V.posterior_variance, dict(vae=vae, x=small[:2]), dict(x=bad_images, vae=["vae"]))
    refuses_each(V.noise_score, dict(samples=small[:2]), dict(samples=bad_images))
    clf = V.IdentityClassifier(images[:300], labels[:300])
    refuses_each(V.identity_retention, dict(samples=small[:2], identity_classifier=clf, target=1),
                 dict(samples=bad_images, target=[-1, *BAD_NUMBERS], identity_classifier=[None, "clf"]))
    refuses_each(V.IdentityClassifier, dict(images=images[:50], labels=labels[:50]),
                 dict(labels=[labels[:49], labels[:50] + 0.5, -labels[:50] - 1, "y"], images=bad_images))
    refuses_each(V.KLVAE, dict(), dict(width=[1, *BAD_NUMBERS], latent_channels=[0, *BAD_NUMBERS],
                                       size=[30, 4, *BAD_NUMBERS]))
    refuses_each(V.load_identities, dict(), dict(size=[4, 10**6, *BAD_NUMBERS]))
    for z in (torch.zeros(2, 3, 8, 8), torch.zeros(2, 128), "z"):
        assert_refused(vae.decode, z, name="z")
    assert_refused(ldm, torch.zeros(2, 5), torch.zeros(2), name="z_t")
    refuses_each(V.experiment, dict(scale="fast", seed=0), dict(scale=["huge", None, 3], seed=[-1, 1.5, "0", None]))


def test_variance_factor_scales_the_training_noise(tiny):
    "personalize's variance_factor multiplies the posterior variance of every draw: more factor, noisier latents."
    _, _, small, vae, ldm = tiny
    torch.manual_seed(0)
    a = V.personalize(ldm, vae, small[:2], steps=3, seed=1, variance_factor=1.0)
    b = V.personalize(ldm, vae, small[:2], steps=3, seed=1, variance_factor=1.0)
    c = V.personalize(ldm, vae, small[:2], steps=3, seed=1, variance_factor=1e4)
    same = all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert same and not all(torch.equal(p, q) for p, q in zip(a.parameters(), c.parameters()))


def test_no_identity_class(tiny):
    "With noise images, the classifier learns a NO_IDENTITY class: pixel noise is no longer counted as a digit."
    images, labels, _, _, _ = tiny
    g = torch.Generator().manual_seed(0)
    noise = torch.rand((300, 1, 32, 32), generator=g)
    clf = V.IdentityClassifier(images[:600], labels[:600], noise_images=noise)
    fresh = torch.rand((100, 1, 32, 32), generator=g)
    assert np.mean(clf.predict(fresh) == V.IdentityClassifier.NO_IDENTITY) > 0.9
    for t in range(10):
        assert V.identity_retention(fresh, clf, t) < 0.1
    assert np.mean(clf.predict(images[600:900]) == labels[600:900]) > 0.85
