

def test_wrap_title_never_splits_mathtext():
    from twolayer import plots

    title = r"$f_{\theta}$ (colour) vs $\frac{1+\alpha}{4}\langle w^*,x\rangle$ (dashed), σ=1e-06"
    wrapped = plots.wrap_title(title, 20)
    assert wrapped.count("\n") >= 2
    for line in wrapped.split("\n"):
        assert line.count("$") % 2 == 0, line  # every math span closes on its line
    assert wrapped.replace("\n", " ") == title
