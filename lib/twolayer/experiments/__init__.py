"""The chapters' experiments, one module per paper (``experiments.sarussi2021``, ...).

Each function runs one experiment of a page — the networks of a figure trained over
seeds, settings or steps, and their measured summary (a table or arrays) — so that
a notebook's experiment cell is one call. What is measured is theory (``theory``),
how a network is trained is ``flows``; an experiment only puts them together.
"""
