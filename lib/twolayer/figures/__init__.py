"""The book's figures, one module per paper (``figures.sarussi2021``, ...).

Each function draws one figure of a page from arrays the page has measured: no
training, no theory (that lives in ``flows`` and ``theory``), only the layout,
so that a notebook's figure cell is one call. Generic helpers shared by every
chapter (``panels``, ``decision_boundary``, ``fit_titles``, ...) stay in
:mod:`twolayer.plots`.
"""
