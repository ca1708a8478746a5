"""Locking claims tables: the claims cell's output of the last build stored in
the source notebook, which nbval compares."""

from __future__ import annotations

from .pages import PageError, Paths, resolve, variants

CHECK_TAG = "nbval-check-output"


def lock(paths: Paths, nbs: list[str]) -> list[str]:
    """Copy the output of each notebook's claims cell (the one tagged
    ``nbval-check-output``) from the last build into the source notebook, and
    clear every other stored output, so that nbval compares the claims table.
    Raises :class:`~twolayer.pipeline.pages.PageError` for a variant page (its
    table would overwrite its source notebook's), a page not built yet or without
    a single claims cell (earlier pages stay locked)."""
    import nbformat

    declared = variants(paths)
    for nb in nbs:  # every page checked before anything is written
        if nb in declared:
            raise PageError(
                f"{nb}: a variant page shares the source notebook of "
                f"{declared[nb][0]}; lock that page (nbval checks the source's "
                "default parameters)"
            )
    done = []
    for nb in nbs:
        src, built = resolve(paths, nb), paths.executed / f"{nb}.ipynb"
        if not built.exists():
            raise PageError(f"{nb}: not built yet; run `twolayer build` first")
        source, executed = (
            nbformat.read(src, as_version=4),
            nbformat.read(built, as_version=4),
        )
        checked = [c for c in executed.cells if CHECK_TAG in c.metadata.get("tags", [])]
        outputs = [c.outputs for c in checked]
        targets = [c for c in source.cells if CHECK_TAG in c.metadata.get("tags", [])]
        if len(outputs) != 1 or len(targets) != 1:
            raise PageError(
                f"{nb}: expected exactly one cell tagged {CHECK_TAG!r} (the claims "
                "cell)"
            )
        if any(o.get("output_type") == "error" for o in outputs[0]):
            raise PageError(
                f"{nb}: the claims cell of the last build raised; fix it before locking"
            )
        for cell in source.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        targets[0].outputs = outputs[0]
        targets[0].execution_count = (
            checked[0].execution_count or 1
        )  # nbval skips unrun cells
        nbformat.write(source, src)
        done.append(nb)
    return done
