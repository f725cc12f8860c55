"""Chemical identity of condition values: names, SMILES (RDKit-canonicalised) and condition roles.

RDKit lives in the ``chem`` extra and is imported only when a SMILES is actually given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import NotRequired, TypedDict

# Condition roles a table's columns can be mapped onto (``--role COL=ROLE``): the condition
# field names RxnOptBench questions use (the paper's worked examples and prompt templates name
# catalyst, ligand, solvents, reagents, additive, reaction_temperature, reaction_time,
# electrolyte, scale...), plus the few families a screening grid commonly adds.
ROLES = (
    "catalyst",
    "ligand",
    "base",
    "acid",
    "additive",
    "reagents",
    "oxidant",
    "reductant",
    "photocatalyst",
    "electrolyte",
    "solvents",
    "reaction_temperature",
    "reaction_time",
    "atmosphere",
    "light_source",
    "constant_current",
    "electrode",
    "concentration",
    "equivalents",
    "catalyst_loading",
    "pressure",
    "scale",
    "selected_conditions",
)


# The order in which a chemist would rather vary an axis when two axes have as many levels
# (issue: catalyst/ligand > base > reagent/additive > solvent > temperature/time). An axis is
# placed by words in its name (or its --role); amounts (loading, equivalents, concentration)
# are not the species they measure, and every other axis comes last, in declared order.
ROLE_FAMILIES = (
    ("catalyst", "ligand", "cat", "lig"),
    ("base", "acid"),
    ("reagent", "additive", "oxidant", "reductant", "electrolyte"),
    ("solvent",),
    ("temperature", "temp", "time", "t_res", "residence"),
)
_AMOUNT_WORDS = ("loading", "equiv", "conc", "ratio", "mol", "pressure", "scale", "amount")


def role_rank(key: str) -> int:
    """0 (catalyst/ligand) .. 4 (temperature/time), 5 for any other axis (see ROLE_FAMILIES)."""
    name = key.lower()
    if any(word in name for word in _AMOUNT_WORDS):
        return len(ROLE_FAMILIES)
    for rank, words in enumerate(ROLE_FAMILIES):
        if any(word in name for word in words):
            return rank
    return len(ROLE_FAMILIES)


# What kind of factor an axis is, for choosing the axes a user's table varies by default. A
# chemist optimising a reaction screens the species that make it work (catalyst, ligand, base,
# solvent, reagents) and the process settings; an additive or inhibitor screen probes robustness
# (e.g. the isoxazole additives of a Buchwald-Hartwig robustness screen), so varying it alone
# asks which spectator hurts least, not which conditions a chemist would pick. Detection is by
# words in the column name (or its --role), checked in this order: amounts and process settings
# first (a loading is not the species it measures; a light source is not a ligand), then
# additive words, then species words; any other axis is "process". `--axis-kind COL=KIND`
# overrides it.
AXIS_KINDS = ("species", "process", "additive")
_PROCESS_WORDS = (
    *_AMOUNT_WORDS,
    *ROLE_FAMILIES[4],
    "light",
    "current",
    "electrode",
    "atmosphere",
    "wavelength",
)
_ADDITIVE_WORDS = ("additive", "inhibitor", "poison", "spike", "impurit", "contaminant")
_SPECIES_WORDS = (
    *ROLE_FAMILIES[0],
    "base",
    "acid",
    "solvent",
    "reagent",
    "oxidant",
    "reductant",
    "electrolyte",
    "metal",
    "promoter",
)


def axis_kind(key: str) -> tuple[str, str]:
    """(kind, why) of a condition axis by the words of its name (see AXIS_KINDS)."""
    name = key.lower()
    for kind, words in (
        ("process", _PROCESS_WORDS),
        ("additive", _ADDITIVE_WORDS),
        ("species", _SPECIES_WORDS),
    ):
        hit = next((w for w in words if w in name), None)
        if hit is not None:
            return kind, f"name contains {hit!r}"
    return "process", "name matches no species or additive word"


class ComponentJson(TypedDict):
    """A component as question files show it (release layout)."""

    content: str
    SMILES: str
    aliases: NotRequired[list[str]]


@dataclass(frozen=True)
class Component:
    """A named chemical (or a plain condition value) with its SMILES when the source gives one."""

    content: str
    smiles: str = ""
    smiles_valid: bool | None = None  # None: no SMILES given; False: given but rdkit rejects it
    aliases: tuple[str, ...] = ()  # other names the table gives this structure

    def to_json(self) -> ComponentJson:
        out: ComponentJson = {"content": self.content, "SMILES": self.smiles}
        if self.aliases:
            out["aliases"] = list(self.aliases)
        return out

    @property
    def identity(self) -> str:
        """What makes two values the same option: the canonical SMILES when valid, else the
        name."""
        return self.smiles if self.smiles and self.smiles_valid else self.content


@lru_cache(maxsize=65536)
def canonical_smiles(smiles: str) -> tuple[str, bool]:
    """rdkit canonical form; an invalid SMILES is kept as written and flagged, never dropped."""
    if not smiles:
        return "", False
    try:
        from rdkit import Chem, RDLogger
    except ImportError as exc:  # the chem extra is optional
        from labreplay.errors import LabreplayError

        raise LabreplayError(
            "SMILES need RDKit: install the chem extra (pip install 'labreplay[chem]')"
        ) from exc

    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return smiles, False
    return Chem.MolToSmiles(mol), True


def component(content: object, smiles: object = "") -> Component:
    try:
        return _component_cached(content, smiles)
    except TypeError:  # unhashable cell
        return _component(content, smiles)


@lru_cache(maxsize=65536)
def _component_cached(content: object, smiles: object) -> Component:
    return _component(content, smiles)


def _component(content: object, smiles: object) -> Component:
    text = clean_text(content)
    raw = clean_text(smiles)
    if not raw:
        return Component(text)
    canon, ok = canonical_smiles(raw)
    return Component(text or canon, canon, ok)


def clean_text(value: object) -> str:
    """A cell as display text: whitespace collapsed, NaN/None empty, floats without trailing 0s."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return " ".join(str(value).split())
