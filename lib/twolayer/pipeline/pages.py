"""The book's pages: the project root, notebooks, declared variants, and each
page's parameters (declared in its notebook, :mod:`.declarations`)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from . import declarations as params_mod

ROOT_ENV = "TWOLAYER_ROOT"


class PageError(Exception):
    """A page the pipeline cannot find or lock (an unknown name, not built yet, no
    single claims cell): the ``twolayer`` command prints the message and exits
    with status 1."""


def project_root() -> Path:
    """The project root (holds ``_toc.yml``): ``$TWOLAYER_ROOT`` or the repo of this
    file."""
    env = os.environ.get(ROOT_ENV)
    root = Path(env) if env else Path(__file__).resolve().parents[3]
    if not (root / "_toc.yml").exists():
        raise FileNotFoundError(
            f"{root} is not the book's root (no _toc.yml); set {ROOT_ENV}"
        )
    return root


@dataclass(frozen=True)
class Paths:
    root: Path

    @property
    def book(self) -> Path:
        return self.root / "book"

    @property
    def build(self) -> Path:
        return self.root / "_build"

    @property
    def cache(self) -> Path:
        return self.build / "cache"

    @property
    def runs(self) -> Path:
        """Finished training runs, reused by every execution (flows.memo)."""
        return self.build / "runs"

    @property
    def executed(self) -> Path:
        return self.build / "executed"

    @property
    def staged(self) -> Path:
        return self.build / "src"

    @property
    def lib(self) -> Path:
        return self.root / "lib" / "twolayer"


def notebook_ids(paths: Paths) -> list[str]:
    """Every notebook of the book as ``chapter/name`` (sorted)."""
    return sorted(
        str(p.relative_to(paths.book).with_suffix(""))
        for p in paths.book.rglob("*.ipynb")
        if ".ipynb_checkpoints" not in p.parts
    )


VARIANTS_FILE = "variants.yml"


VARIANT_SEP = "__"


def variants(paths: Paths) -> dict[str, tuple[str, dict]]:
    """Declared variants: page id ``chapter/name__variant`` -> (notebook id,
    parameters).

    Any chapter may hold a ``book/<chapter>/variants.yml``: a list of entries
    ``{notebook: chapter/name, variant: label, parameters: {...}}``. Each one is
    executed like ``twolayer rerun chapter/name -p ...`` (cached on its parameters)
    and staged as its own page ``book/chapter/name__label.ipynb`` for ``_toc.yml``.
    """
    import yaml

    out: dict[str, tuple[str, dict]] = {}
    for spec in sorted(paths.book.rglob(VARIANTS_FILE)):
        entries = yaml.safe_load(spec.read_text()) or []
        if not isinstance(entries, list):
            raise ValueError(
                f"{spec}: expected a list of {{notebook, variant, parameters}} entries"
            )
        for e in entries:
            if (
                not isinstance(e, dict)
                or set(e) - {"notebook", "variant", "parameters"}
                or not {"notebook", "variant"} <= set(e)
            ):
                raise ValueError(
                    f"{spec}: bad entry {e!r}; keys are notebook, variant, parameters"
                )
            nb, label = (
                str(e["notebook"]).removesuffix(".ipynb").removeprefix("book/"),
                str(e["variant"]),
            )
            if not re.fullmatch(r"[A-Za-z0-9_-]+", label) or VARIANT_SEP in label:
                raise ValueError(
                    f"{spec}: variant {label!r} must be letters, digits, '_' or '-' "
                    "(no '__')"
                )
            if not (paths.book / f"{nb}.ipynb").exists():
                raise ValueError(
                    f"{spec}: variant {label!r} of unknown notebook {nb!r}"
                )
            params = e.get("parameters") or {}
            if not isinstance(params, dict):
                raise ValueError(f"{spec}: parameters of {label!r} must be a mapping")
            page = f"{nb}{VARIANT_SEP}{label}"
            if page in out:
                raise ValueError(f"{spec}: variant {page!r} declared twice")
            out[page] = (nb, params)
    return out


def book_pages(paths: Paths) -> list[str]:
    """Every executed page of the book: the notebooks and their declared variants."""
    return sorted(notebook_ids(paths) + list(variants(paths)))


def page_id(paths: Paths, nb: str) -> str:
    """Normalise a command-line name to a page id (a notebook or a declared variant)."""
    ident = nb.removesuffix(".ipynb").removeprefix("book/")
    if VARIANT_SEP in Path(ident).name and ident in variants(paths):
        return ident
    return str(resolve(paths, ident).relative_to(paths.book).with_suffix(""))


def page_parameters(paths: Paths, nb: str) -> dict:
    """The parameters a page is executed with by default (a variant's declared ones,
    else none)."""
    v = variants(paths).get(nb) if VARIANT_SEP in Path(nb).name else None
    return dict(v[1]) if v else {}


def resolve(paths: Paths, nb: str) -> Path:
    """``chapter/name`` (with or without ``.ipynb`` / ``book/``) to the source path;
    a variant ``chapter/name__label`` resolves to its notebook's source."""
    ident = nb.removesuffix(".ipynb").removeprefix("book/")
    if VARIANT_SEP in Path(ident).name and not (paths.book / f"{ident}.ipynb").exists():
        v = variants(paths).get(ident)
        if v is not None:
            ident = v[0]
    path = paths.book / f"{ident}.ipynb"
    if not path.exists():
        raise PageError(
            f"unknown notebook {nb!r}; the book's pages are:\n  "
            + "\n  ".join(book_pages(paths))
        )
    return path


def parameters(paths: Paths, nb: str) -> dict[str, params_mod.Parameter]:
    """The notebook's declared parameters (:mod:`.declarations`); for a
    variant page, its own parameters are the defaults."""
    decls = params_mod.declarations(resolve(paths, nb))
    own = page_parameters(paths, nb)
    return {
        k: (replace(p, default=own[k], default_text=repr(own[k])) if k in own else p)
        for k, p in decls.items()
    }


def check_parameters(paths: Paths, nb: str, params: dict) -> dict:
    """Validate ``params`` against the notebook's declarations before any kernel
    starts; returns them coerced to the declared types, without the ones equal
    to the page's defaults (so ``-p seed 0`` is the default run). Raises
    :class:`twolayer.pipeline.declarations.ParameterError` (one line)."""
    decls = parameters(paths, nb)
    checked = params_mod.validate(decls, params, page=nb)
    return params_mod.non_default(decls, checked)
