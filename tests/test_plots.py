def test_wrap_title_never_splits_mathtext():
    from twolayer import plots

    title = (
        r"$f_{\theta}$ (colour) vs $\frac{1+\alpha}{4}\langle w^*,x\rangle$ "
        "(dashed), σ=1e-06"
    )
    wrapped = plots.wrap_title(title, 20)
    assert wrapped.count("\n") >= 2
    for line in wrapped.split("\n"):
        assert line.count("$") % 2 == 0, line  # every math span closes on its line
    assert wrapped.replace("\n", " ") == title


def test_zero_set_draws_another_boundary_and_returns_the_grid():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from twolayer import plots

    fig, ax = plt.subplots()
    F = plots.zero_set(ax, lambda Z: Z[:, 0] - 0.2, lim=1.0, n=50, colors="g")
    assert F.shape == (50, 50) and len(ax.collections) == 1
    plots.zero_set(
        ax, lambda Z: 1 + 0 * Z[:, 0], lim=1.0, n=50
    )  # no zero set: nothing drawn
    assert len(ax.collections) == 1
    plt.close(fig)


def test_decision_boundary_shades_an_exact_zero_region():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from twolayer import plots

    def relu_pair(Z):  # N = relu(z1 + z2) - relu(z1 - z2): zero where both are off
        return np.maximum(Z @ [1.0, 1.0], 0) - np.maximum(Z @ [1.0, -1.0], 0)

    fig, ax = plt.subplots()
    F = plots.decision_boundary(ax, relu_pair, n=41, zero_color="0.5")
    assert (F == 0).any() and (F > 0).any() and (F < 0).any()
    assert len(ax.collections[0].get_facecolors()) >= 3  # negative, zero, positive
    plt.close(fig)


def test_fit_titles_folds_a_long_title_to_its_panel_without_drawing_the_canvas():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from twolayer import plots

    fig, axes = plots.panels(1, 2)
    long = (
        "a title far too long for half of the page's width, with $\\|W\\|_2$ in it " * 2
    )
    axes[0].set_title(long)
    axes[1].set_title("short")
    plots.fit_titles(fig)
    lines = axes[0].get_title().split("\n")
    assert len(lines) > 1 and " ".join(lines) == long.strip()
    assert axes[1].get_title() == "short"
    renderer = fig.canvas.get_renderer()
    fig.canvas.draw()
    width = axes[0].get_window_extent(renderer).width
    assert axes[0].title.get_window_extent(renderer).width <= 1.05 * width
    plt.close(fig)
