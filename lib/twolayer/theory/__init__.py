"""One module per paper (its definitions and checks) plus shared :mod:`margins`."""
