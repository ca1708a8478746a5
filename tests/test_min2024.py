"""Tests of twolayer.theory.min2024 (Min, Mallada & Vidal 2024) and the pipeline's
variants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twolayer import data, flows, models
from twolayer.theory import min2024 as M


def _two_cones(mu_angle: float = 0.3):
    return data.opposite_cones(12, 2, mu_angle, seed=1)


# ------------------------------------------------------------------ separability


def test_separability_two_points_is_sin_theta():
    for theta in (0.1, 0.5, 1.0):
        ds = data.two_point_set(theta)
        assert M.separability(ds.X, ds.y) == pytest.approx(np.sin(theta))


def test_separability_orthogonal_is_zero_and_opposite_labels_positive():
    assert M.separability([[1.0, 0.0], [0.0, 1.0]], [1, 1]) == pytest.approx(0.0)
    # opposite labels at an obtuse angle: y_i x_i are at an acute angle
    assert M.separability([[1.0, 0.0], [-1.0, 0.2]], [1, -1]) > 0.9


def test_separability_fails_assumption_returns_nonpositive():
    X = np.array([[1.0, 0.0], [1.0, 0.1]])
    assert M.separability(X, [1, -1]) <= 0  # same direction, different labels
    ds = data.mnist_pair(1, 0, max_per_class=20)
    # raw pixels: every inner product is >= 0, so opposite-label pairs violate
    # Assumption 1
    assert M.separability(ds.X, ds.y) < 0


def test_separability_returns_python_float_and_accepts_torch():
    import torch

    mu = M.separability(
        torch.tensor([[1.0, 0.0], [0.6, 0.8]]), torch.tensor([1.0, 1.0])
    )
    assert isinstance(mu, float) and mu == pytest.approx(0.6)


@given(st.floats(0.0, 0.7), st.integers(0, 50))
@settings(max_examples=25, deadline=None)
def test_opposite_cones_satisfy_assumption1(half_angle, seed):
    ds = data.opposite_cones(10, 3, half_angle, seed=seed)
    assert M.separability(ds.X, ds.y) >= np.cos(2 * half_angle) - 1e-9


@given(st.integers(0, 1000))
@settings(max_examples=25, deadline=None)
def test_separability_is_scale_invariant_and_at_most_one(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((6, 3))
    y = np.where(rng.random(6) < 0.5, 1.0, -1.0)
    mu = M.separability(X, y)
    assert mu <= 1.0 + 1e-12
    assert M.separability(X * rng.uniform(0.1, 10, (6, 1)), y) == pytest.approx(mu)


@pytest.mark.parametrize(
    "X, y, match",
    [
        ([[1.0, 0.0], [0.0, 0.0]], [1, 1], "zero rows"),
        ([[1.0, 0.0]], [1, 1], "length 1"),
        ([[1.0, 0.0], [0.0, 1.0]], [1, 0], "labels -1 and \\+1"),
        ([1.0, 0.0], [1], "2-D"),
        ([[np.nan, 0.0]], [1], "NaN"),
        ("abc", [1], "numeric"),
    ],
)
def test_separability_bad_input(X, y, match):
    with pytest.raises(ValueError, match=match):
        M.separability(X, y)


# ---------------------------------------------------------- cones, field, records


def test_cone_membership_codes():
    X = np.array([[1.0, 0.0], [-1.0, 0.1]])
    y = np.array([1.0, -1.0])
    W = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, -1.0], [0.05, 1.0]])
    assert M.cone_membership(W, X, y).tolist() == [
        M.S_PLUS,
        M.S_MINUS,
        M.S_DEAD,
        M.S_NONE,
    ]


def test_cone_membership_bad_shapes():
    with pytest.raises(ValueError, match="columns"):
        M.cone_membership(np.ones((2, 3)), np.ones((2, 2)), [1, -1])
    with pytest.raises(ValueError, match="shape"):
        M.membership_record(np.ones((2, 2)), np.ones((2, 2)), [1, -1])


def test_direction_field_sums_active_signed_points():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])
    y = np.array([1.0, 1.0, -1.0])
    W = np.array([[1.0, 1.0]])
    assert np.allclose(M.direction_field(W, X, y), [[1.0, 1.0]])
    assert np.allclose(M.direction_field(W, X, y, alpha=0.5), [[1.5, 1.5]])
    with pytest.raises(ValueError, match="alpha"):
        M.direction_field(W, X, y, alpha=1.5)


def test_aggregate_data():
    xp, xm = M.aggregate_data([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]], [1, -1, 1])
    assert np.allclose(xp, [3.0, 2.0]) and np.allclose(xm, [0.0, 1.0])


def test_alignment_time_and_exits():
    rec = np.array([[M.S_NONE, M.S_PLUS], [M.S_PLUS, M.S_PLUS], [M.S_PLUS, M.S_DEAD]])
    t = np.array([0.0, 1.0, 2.0])
    assert M.alignment_time(t, rec) == 1.0
    assert (
        M.alignment_time(t, rec, signs=[1, -1]) == 2.0
    )  # neuron 2 (v<0) counts only in S- or S_dead
    assert M.alignment_time(t, np.full((3, 2), M.S_NONE)) == np.inf
    assert M.cone_exits(rec) == 1 and M.cone_exits(rec, start=2) == 0
    with pytest.raises(ValueError, match="cone codes"):
        M.cone_exits(np.full((2, 2), 7))
    with pytest.raises(ValueError, match="start"):
        M.cone_exits(rec, start=5)
    with pytest.raises(ValueError, match="times"):
        M.alignment_time([0.0], rec)


def test_monotonicity_violations_counts_forbidden_changes():
    X = np.array([[1.0, 0.0], [-1.0, 0.0]])
    y = np.array([1.0, -1.0])
    good = np.array([[[0.0, 1.0]], [[1.0, 0.1]]])  # gains the positive point
    bad = np.array(
        [[[1.0, 0.1]], [[-1.0, 0.1]]]
    )  # loses the positive, gains the negative
    assert M.monotonicity_violations(good, [1.0], X, y).tolist() == [0]
    assert M.monotonicity_violations(bad, [1.0], X, y).tolist() == [2]
    assert M.monotonicity_violations(bad, [-1.0], X, y).tolist() == [
        0
    ]  # fine for a negative neuron
    with pytest.raises(ValueError, match="signs"):
        M.monotonicity_violations(bad, [1.0, 1.0], X, y)


# ------------------------------------------------------------------ Lemma 1


def test_lemma1_error_small_along_gradient_flow_and_below_lemma4_bound():
    ds = _two_cones()
    net = models.TwoLayerNet(2, 8, init="balanced", init_scale=1e-5, seed=0)
    W0, _ = net.weights()
    gf = flows.gradient_flow(
        net,
        ds,
        0.4,
        snapshot_times=np.linspace(0, 0.4, 5),
        reduction="sum",
        rtol=1e-10,
        atol=1e-13,
    )
    for W, v in zip(gf.param("W"), gf.param("a")):
        err = M.lemma1_error(W, v, ds.X, ds.y).max()
        assert err <= M.lemma4_bound(W, v, ds.X)
    lb = M.lemma1_bound(ds.X, W0, 1e-5)
    assert lb.applies and lb.horizon > 0 and lb.error > 0


def test_direction_velocity_matches_finite_difference_of_gradient_flow():
    ds = _two_cones()
    rng = np.random.default_rng(0)
    W = rng.standard_normal((4, 2)) * 0.3
    v = np.linalg.norm(W, axis=1) * np.array([1, -1, 1, -1])
    gW, gv = M.weighted_gradients(W, v, ds.X, ds.y, loss_weight=1.0)
    h = 1e-6
    W2 = W + h * gW
    num = (
        W2 / np.linalg.norm(W2, axis=1)[:, None]
        - W / np.linalg.norm(W, axis=1)[:, None]
    ) / h
    assert np.allclose(
        M.direction_velocity(W, v, ds.X, ds.y, loss_weight=1.0), num, atol=1e-4
    )


def test_weighted_gradients_match_torch_autograd():
    import torch

    ds = _two_cones()
    net = models.TwoLayerNet(2, 5, init="gaussian", init_scale=0.5, seed=3)
    loss = flows.logistic_loss(torch.tensor(ds.y) * net(torch.tensor(ds.X)), "sum")
    loss.backward()
    W, a = net.weights()
    gW, gv = M.weighted_gradients(W, a, ds.X, ds.y, loss_weight=1.0)
    assert np.allclose(gW, -net.W.grad.numpy()) and np.allclose(gv, -net.a.grad.numpy())


def test_lemma_bounds_bad_input():
    with pytest.raises(ValueError, match="eps"):
        M.lemma1_bound(np.eye(2), np.eye(2), 0.0)
    with pytest.raises(ValueError, match="columns"):
        M.lemma1_bound(np.eye(2), np.ones((3, 3)), 1e-3)
    with pytest.raises(ValueError, match="zero rows"):
        M.lemma1_error(np.zeros((1, 2)), [1.0], np.eye(2), [1, -1])
    with pytest.raises(ValueError, match="v must have length"):
        M.lemma1_error(np.ones((2, 2)), [1.0], np.eye(2), [1, -1])
    assert M.lemma4_bound(np.ones((1, 2)) * 10, [10.0], np.eye(2)) == np.inf


# ------------------------------------------------------------------ misc


def test_t1_order_and_bad_assumption():
    ds = _two_cones()
    assert M.t1_order(ds.X, ds.y) == pytest.approx(
        np.log(ds.n) / np.sqrt(M.separability(ds.X, ds.y))
    )
    with pytest.raises(ValueError, match="Assumption 1"):
        M.t1_order([[1.0, 0.0], [1.0, 0.1]], [1, -1])


def test_alignment_and_track():
    X = np.array([[1.0, 0.0], [-1.0, 0.0]])
    y = np.array([1.0, -1.0])
    W = np.array([[1.0, 0.0], [2.0, 1.0], [-1.0, 0.0]])
    v = np.array([1.0, 1.0, -1.0])
    al = M.alignment(W, v, X, y)
    assert al.max_plus == pytest.approx(1.0) and al.mean_minus == pytest.approx(1.0)
    assert np.isnan(M.alignment(W, np.ones(3), X, y).mean_minus)
    tr = M.track([0.0, 1.0], np.stack([W, W]), np.stack([v, v]), X, y)
    assert tr.cos("mean_minus").tolist() == [1.0, 1.0] and tr.membership.shape == (2, 3)
    lean = M.track([0.0, 1.0], np.stack([W, W]), np.stack([v, v]), X, y, cones=False)
    assert lean.membership.shape == (2, 0)
    np.testing.assert_array_equal(lean.alignment, tr.alignment)
    with pytest.raises(ValueError, match="which"):
        tr.cos("nope")


def test_norm_direction_changes_nonnegative():
    ds = _two_cones()
    W = np.random.default_rng(1).standard_normal((6, 2))
    dn, dd = M.norm_direction_changes(W, np.ones(6), ds.X, ds.y)
    assert dn >= 0 and dd >= 0


def test_equivalent_step_and_mnist_sizes():
    assert M.mnist_paper_size((0, 1)) == 12665
    assert M.equivalent_step(2e-3, 12665, 800) == pytest.approx(2e-3 * 12665 / 800)
    with pytest.raises(ValueError, match="digits"):
        M.mnist_paper_size((0, 11))
    with pytest.raises(ValueError, match="n must"):
        M.equivalent_step(1e-3, 10, 0)
    with pytest.raises(ValueError, match="lr"):
        M.equivalent_step(-1.0, 10, 10)


# ------------------------------------------------------------------ pipeline variants


def test_pipeline_variants(tmp_path):
    import nbformat

    from twolayer import pipeline as P

    (tmp_path / "_toc.yml").write_text("format: jb-book\n")
    ch = tmp_path / "book" / "ch"
    ch.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("k = 1  # a parameter")
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell]
    nbformat.write(nb, ch / "nb.ipynb")
    (ch / "variants.yml").write_text(
        "- notebook: ch/nb\n  variant: two\n  parameters: {k: 2}\n"
    )
    paths = P.Paths(tmp_path)
    assert P.book_pages(paths) == ["ch/nb", "ch/nb__two"]
    assert P.resolve(paths, "ch/nb__two") == ch / "nb.ipynb"
    assert (
        P.page_parameters(paths, "ch/nb__two") == {"k": 2}
        and P.page_parameters(paths, "ch/nb") == {}
    )
    assert P.page_id(paths, "book/ch/nb__two.ipynb") == "ch/nb__two"
    (ch / "variants.yml").write_text("- notebook: ch/missing\n  variant: two\n")
    with pytest.raises(ValueError, match="unknown notebook"):
        P.variants(paths)
    (ch / "variants.yml").write_text("- notebook: ch/nb\n  variant: 'a b'\n")
    with pytest.raises(ValueError, match="variant"):
        P.variants(paths)


def test_paper_time_is_the_flow_time_of_the_papers_loss():
    """Integrating the paper's loss (2 × sum) for paper time s reaches the state the
    book's sum loss reaches at book time 2s, and the book's mean loss at 2ns."""
    import copy

    import torch

    from twolayer import data, flows, models

    ds = data.two_gaussians(12, 3, seed=0)
    net = models.TwoLayerNet(3, 4, init="gaussian", init_scale=0.5, seed=1)
    s, steps = 0.02, 400
    paper = copy.deepcopy(net)  # Euler steps of the paper's flow: gradient of 2 * sum
    opt = torch.optim.SGD(paper.parameters(), lr=s / steps)
    X, y = torch.tensor(ds.X), torch.tensor(ds.y)
    for _ in range(steps):
        opt.zero_grad()
        (2 * flows.logistic_loss(y * paper(X), "sum")).backward()
        opt.step()
    for reduction in ("sum", "mean"):
        t_book = float(M.book_time(s, reduction, n=ds.n))
        book = copy.deepcopy(net)
        flows.gd(book, ds, lr=t_book / steps, steps=steps, reduction=reduction)
        assert torch.allclose(book.W, paper.W, atol=1e-9)
        assert float(M.paper_time(t_book, reduction, n=ds.n)) == pytest.approx(s)
    assert t_book == pytest.approx(2 * ds.n * s)
    with pytest.raises(ValueError, match="needs the number of points"):
        M.paper_time(1.0, "mean")


def test_per_example_step_matches_the_papers_mean_loss_step():
    # one book step on the sum of log(1+e^-q) equals one step at lr_paper on the
    # mean of 2 log(1+e^-q): the same update
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((7, 3)), np.sign(rng.standard_normal(7))
    w = rng.standard_normal(3)

    def grad_sum(w):
        q = y * (X @ w)
        return -(y / (1 + np.exp(q))) @ X

    lr = M.per_example_step(0.002, 7)
    paper = 0.002 * 2 * grad_sum(w) / 7
    assert np.allclose(lr * grad_sum(w), paper)
    with pytest.raises(ValueError, match="n must be"):
        M.per_example_step(0.002, 0)


def test_own_class_active_splits_neurons_by_their_class():
    X = np.array([[1.0, 0.0], [-1.0, 0.2]])
    y = np.array([1.0, -1.0])
    W = np.array([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]])
    signs = np.array([1.0, -1.0, 1.0])
    # neuron 0 (+) active on the positive point; neuron 1 (−) only on the positive;
    # neuron 2 (+) only on the negative
    assert M.own_class_active(W, signs, X, y).tolist() == [True, False, False]


def test_late_max_reads_the_last_decades_only():
    t = np.logspace(0, 6, 61)
    v = np.where(t < 1e3, 5.0, 1.0 + 1e-7 * t)
    assert M.late_max(t, v, decades=3) == pytest.approx(1.1)
    assert M.late_max(t, v, decades=6) == 5.0


def test_max_from_reads_from_t_from_on_only():
    t = np.logspace(-2, 4, 61)
    v = 3.0 / (1.0 + t)  # decreasing: the max from t_from on is v(first t >= t_from)
    k = int(np.argmax(t >= 1.0))
    assert M.max_from(t, v, 1.0) == v[k] == pytest.approx(1.5)
    assert M.max_from(t, v, t[0]) == v.max()
    with pytest.raises(ValueError, match="after the last time"):
        M.max_from(t, v, 2e4)


def test_long_flow_summary_on_an_exact_one_over_t_loss():
    # L = 1 / (1 + t / 100): halves at t = 100; t L(t) rises to 100 and no more
    t = np.logspace(-1, 6, 200)
    loss = 1 / (1 + t / 100)
    Ws = [np.diag([1.0, 0.5])] * len(t)  # stable rank 1 + 1/4
    r = M.long_flow_summary(t, loss, Ws)
    assert r["t2"] == pytest.approx(100, rel=0.1)
    tl = t * loss
    k = np.searchsorted(t, r["t2"])
    assert r["rate"] == pytest.approx(tl[-1] / tl[k])
    assert r["rate_early"] > r["rate"]
    assert r["late"] == pytest.approx(1.25)


def test_escape_iterations_match_an_exponential_growth():
    # an aligned neuron's output grows like exp(2 r k): count the steps to reach 1
    x_plus, x_minus = np.array([3.0, 4.0]), np.array([-1.0, 0.0])
    lr, f0 = 1e-3, 1e-8
    r = lr * 5.0 / 2
    k = 0
    f = f0
    while f < 1:
        f *= np.exp(2 * r)
        k += 1
    assert M.escape_iterations(lr, x_plus, x_minus, f0) == pytest.approx(k, abs=1)


def test_logistic_loss_against_the_network_output():
    rng = np.random.default_rng(0)
    W, v = rng.normal(size=(4, 3)), rng.normal(size=4)
    X, y = rng.normal(size=(6, 3)), np.array([1, -1, 1, -1, 1, 1.0])
    f = np.array([sum(v[j] * max(W[j] @ x, 0) for j in range(4)) for x in X])
    assert M.logistic_loss(W, v, X, y) == pytest.approx(np.log1p(np.exp(-y * f)).sum())
    g = X @ W.T @ v
    lin = M.logistic_loss(W, v, X, y, linear=True)
    assert lin == pytest.approx(np.log1p(np.exp(-y * g)).sum())


def test_run_cones_is_cone_report_of_the_run():
    ds = data.opposite_cones(10, 2, 0.4, seed=0)
    net = models.TwoLayerNet(2, 8, init="balanced", init_scale=1e-6, seed=0)
    W, v = net.weights()
    run = flows.gd(
        net, ds, lr=2e-3, steps=200, reduction="sum", snapshot_steps=range(201)
    )
    direct = M.cone_report(
        M.paper_time(run.times),
        run.param("W"),
        run.param("a"),
        np.sign(v),
        ds.X,
        ds.y,
        W_init=W,
    )
    assert M.run_cones(run, W, v, ds.X, ds.y) == direct


def test_loss_and_growth_reads_the_snapshot_at_the_step():
    ds = data.opposite_cones(10, 3, 0.4, seed=1)
    net = models.TwoLayerNet(3, 6, init="balanced", init_scale=1e-2, seed=1)
    run = flows.gd(
        net, ds, lr=1e-2, steps=30, reduction="sum", snapshot_steps=[0, 10, 30]
    )
    ratio, growth = M.loss_and_growth(run, 10)
    W = run.param("W")
    assert ratio == pytest.approx(run.loss[1] / run.loss[0])
    assert growth == pytest.approx(
        np.log10(np.linalg.norm(W[1]) / np.linalg.norm(W[0]))
    )
    with pytest.raises(ValueError):
        M.loss_and_growth(run, 20)


def test_escape_slope_of_an_exact_log_law():
    eps = np.array([1e-1, 1e-3, 1e-6, 1e-9])
    rate = 2.5
    t_esc = 0.7 + np.log(1 / eps) / rate
    assert M.escape_slope(eps, t_esc, rate) == pytest.approx(1.0)
    assert M.escape_slope(eps, 2 * t_esc, rate) == pytest.approx(2.0)


def test_live_cosines_shortcut_equals_the_full_activation_check():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 12))
    y = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    xp, xm = M.aggregate_data(X, y)
    for scale in (1.0, 1e-6):
        W = scale * rng.normal(size=(30, 12))
        W[:5] = -np.abs(W[:5]) * np.sign(X).sum(0)  # some rows dead or nearly
        v = rng.normal(size=30)
        cos = np.where(v > 0, M.row_cosines(W, xp), M.row_cosines(W, xm))
        full = cos[((W @ X.T) > 0).any(axis=1)]
        np.testing.assert_array_equal(M.live_cosines(W, v, X, y), full)


def test_phase_summary_equals_the_per_snapshot_definitions():
    ds = data.opposite_cones(16, 5, 0.5, seed=2)
    net = models.TwoLayerNet(5, 12, init="gaussian", init_scale=1e-4, seed=2)
    run = flows.gd(
        net, ds, lr=0.05, steps=600, reduction="sum", snapshot_steps=range(0, 601, 10)
    )
    Ws, vs = run.param("W"), run.param("a")
    s = M.phase_summary(run.steps, run.loss, Ws, vs, ds.X, ds.y)
    k = M.halving_index(run.loss)
    bands = [M.band(W, v, ds.X, ds.y) for W, v in zip(Ws, vs)]
    kb = M.first_index(np.nan_to_num(bands), 0.9)
    al = [M.alignment(W, v, ds.X, ds.y) for W, v in zip(Ws[: k + 1], vs[: k + 1])]
    assert s.t_half == run.steps[k]
    assert s.t_band == (run.steps[kb] if kb is not None else np.inf)
    assert s.cos_plus == np.nanmax([a.mean_plus for a in al])
    assert s.cos_minus == np.nanmax([a.mean_minus for a in al])
    assert s.band == bands[k]


def test_small_output_end_and_monotonicity_against_per_snapshot_loops():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(12, 4))
    y = np.where(rng.random(12) < 0.5, 1.0, -1.0)
    growth = np.geomspace(1e-3, 10, 9)[:, None, None]
    Ws = growth * rng.normal(size=(1, 6, 4)) + 0.05 * rng.normal(size=(9, 6, 4))
    vs = np.abs(growth[:, :, 0]) * rng.choice([-1.0, 1.0], size=(1, 6))
    fmax = [M.max_output(W, v, X) for W, v in zip(Ws, vs)]
    over = [k for k, f in enumerate(fmax) if f >= 1]
    assert M.small_output_end(Ws, vs, X) == (over[0] - 1 if over else len(fmax) - 1)
    s = np.sign(vs[0])
    count = np.zeros(6, dtype=int)
    for a, b in zip(Ws[:-1], Ws[1:]):
        for j in range(6):
            for i in range(12):
                before, after = a[j] @ X[i] > 0, b[j] @ X[i] > 0
                own = s[j] * y[i] > 0
                count[j] += (own and before and not after) or (
                    not own and not before and after
                )
    np.testing.assert_array_equal(M.monotonicity_violations(Ws, s, X, y), count)
