"""The README's generated tables: the one writer every benchmark uses
(``build.py``, ``sweep.py``, ``logtime.py``), each table between its own pair of
markers."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def write_table(table: str, markers: tuple[str, str], readme: Path = README) -> bool:
    """Replace the text between ``markers`` in ``readme`` by ``table``; False (the
    file untouched) when a marker is missing, with a line saying so."""
    text = readme.read_text()
    start, end = markers
    if start not in text or end not in text:
        print(f"{readme.name} has no {start} markers; table not written")
        return False
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    readme.write_text(f"{head}{start}\n{table}\n{end}{tail}")
    return True
