"""BibTeX for labreplay, the three papers its suites follow and the datasets they read: the one
source of `labreplay cite` and of the entries in docs/cite.md (a test checks the page's blocks
against these, and every title and year against CITATION.cff).

The entries carry exactly what CITATION.cff records: where it gives a descriptive title or one
author with "further authors in the publication", so do they.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

ENTRIES: dict[str, str] = {
    "labreplay": """\
@software{labreplay,
  title   = {labreplay: recorded experiments compiled into evaluation environments for AI agents},
  author  = {{The labreplay authors}},
  version = {0.1.0},
  license = {MIT},
  note    = {No archived release or DOI yet}
}
""",
    "barnes2026sdl1": """\
@misc{barnes2026sdl1,
  title        = {Dynamical-SDL-1: Measuring How Scientific Agents Learn from Physical Experiments},
  author       = {Barnes, Jarrod},
  howpublished = {Dynamical Systems (blog)},
  year         = {2026},
  url          = {https://dynamicalsystems.ai/blog/sdl-1},
  note         = {The benchmark the campaign suite follows}
}
""",
    "ge2026rxnoptbench": """\
@misc{ge2026rxnoptbench,
  title         = {RxnOptBench: Benchmarking LLMs for Reaction-Condition Optimization in Organic Methodology},
  author        = {Ge, Lingli and Wang, Yubin and Gao, Junyuan and Song, Jiahe and Sun, Jiaxing and Zhu, Boyu and Yang, Haote and Wang, Jingchao and Ma, Lixin and Wu, Jiang and Li, Yuqiang and He, Conghui},
  year          = {2026},
  eprint        = {2610.02242},
  archivePrefix = {arXiv},
  url           = {https://arxiv.org/abs/2610.02242},
  note          = {The benchmark the conditions suite follows}
}
""",
    "li2026automatbench": """\
@misc{li2026automatbench,
  title         = {AutoMatBench: An Automatic Optimization Toolkit for the Acceleration of Material Properties Prediction Benchmarking},
  author        = {Li, Hongxiao and Gao, Wanling},
  year          = {2026},
  eprint        = {2607.11526},
  archivePrefix = {arXiv},
  url           = {https://arxiv.org/abs/2607.11526},
  note          = {The benchmark the configsearch suite follows}
}
""",
    "walters2026precursorgenome": """\
@misc{walters2026precursorgenome,
  title  = {The Precursor Genome: A Pairwise Reaction Dataset for Solid-State Synthesis},
  author = {Walters, L. N.},
  year   = {2026},
  doi    = {10.5281/zenodo.21285546},
  note   = {Zenodo, CC BY 4.0; further authors and the companion arXiv paper: see the record}
}
""",
    "szymanski2023alab": """\
@article{szymanski2023alab,
  title   = {An autonomous laboratory for the accelerated synthesis of inorganic materials},
  author  = {Szymanski, N. J.},
  journal = {Nature},
  volume  = {624},
  pages   = {86--91},
  year    = {2023},
  note    = {The A-Lab. Further authors in the publication}
}
""",
    "ahneman2018": """\
@article{ahneman2018,
  title   = {Pd-catalysed C-N coupling high-throughput data (Buchwald-Hartwig)},
  author  = {Ahneman, D. T.},
  journal = {Science},
  volume  = {360},
  pages   = {186--190},
  year    = {2018},
  note    = {Descriptive title. Further authors in the publication}
}
""",
    "perera2018": """\
@article{perera2018,
  title   = {Suzuki-Miyaura high-throughput data},
  author  = {Perera, D.},
  journal = {Science},
  volume  = {359},
  pages   = {429--434},
  year    = {2018},
  doi     = {10.1126/science.aap9112},
  note    = {Descriptive title. Further authors in the publication}
}
""",
    "shields2021": """\
@article{shields2021,
  title   = {EDBO (direct arylation, Mitsunobu, deoxyfluorination data)},
  author  = {Shields, B. J.},
  journal = {Nature},
  volume  = {590},
  pages   = {89--96},
  year    = {2021},
  note    = {Descriptive title. Further authors in the publication}
}
""",
    "torres2022": """\
@article{torres2022,
  title   = {EDBO+ (Ni/photoredox cross-coupling and Suzuki data)},
  author  = {Torres, J. A. G.},
  journal = {Journal of the American Chemical Society},
  volume  = {144},
  pages   = {19999--20007},
  year    = {2022},
  note    = {Descriptive title. Further authors in the publication}
}
""",
    "felton2021": """\
@article{felton2021,
  title   = {Summit (Reizman and Baumgartner benchmark data; summit 0.8.4)},
  author  = {Felton, K.},
  journal = {Chemistry-Methods},
  volume  = {1},
  pages   = {116--122},
  year    = {2021},
  note    = {Descriptive title. Further authors in the publication}
}
""",
    "hase2021": """\
@article{hase2021,
  title   = {Olympus (flow chemistry datasets; olymp 0.0.1b0)},
  author  = {Hase, F.},
  journal = {Machine Learning: Science and Technology},
  volume  = {2},
  pages   = {035021},
  year    = {2021},
  note    = {Descriptive title. Further authors in the publication}
}
""",
    "dunn2020matbench": """\
@article{dunn2020matbench,
  title   = {Benchmarking materials property prediction methods: the Matbench test set and Automatminer reference algorithm},
  author  = {Dunn, A. and Wang, Q. and Ganose, A. and Dopp, D. and Jain, A.},
  journal = {npj Computational Materials},
  volume  = {6},
  pages   = {138},
  year    = {2020},
  note    = {Matbench v0.1 (data CC BY 4.0)}
}
""",
    "choudhary2020jarvis": """\
@article{choudhary2020jarvis,
  title   = {The joint automated repository for various integrated simulations (JARVIS) for data-driven materials design},
  author  = {Choudhary, K.},
  journal = {npj Computational Materials},
  volume  = {6},
  pages   = {173},
  year    = {2020},
  note    = {JARVIS-DFT and its leaderboard data. Further authors in the publication}
}
""",
    "omee2024ood": """\
@article{omee2024ood,
  title   = {Structure-based out-of-distribution (OOD) materials property prediction: a benchmark study},
  author  = {Omee, S. S. and Fu, N. and Dong, R. and Hu, M. and Hu, J.},
  journal = {npj Computational Materials},
  volume  = {10},
  pages   = {144},
  year    = {2024},
  note    = {The OOD protocol AutoMatBench follows, and configsearch compares against}
}
""",
}

TOOL = "labreplay"
# suite -> the paper whose benchmark it follows (configsearch also follows Omee et al.'s
# OOD protocol, which AutoMatBench builds on)
SUITE_PAPERS: dict[str, tuple[str, ...]] = {
    "campaign": ("barnes2026sdl1",),
    "conditions": ("ge2026rxnoptbench",),
    "configsearch": ("li2026automatbench", "omee2024ood"),
}
# data manifest source (`labreplay data list`) -> its entries; () where none is known
SOURCE_ENTRIES: dict[str, tuple[str, ...]] = {
    "precursor-genome": ("walters2026precursorgenome",),
    "alab-pipeline": ("szymanski2023alab",),
    "reactions-buchwald-hartwig": ("ahneman2018",),
    "reactions-suzuki-perera": ("perera2018",),
    "reactions-edbo": ("shields2021",),
    "reactions-edboplus": ("torres2022",),
    "reactions-summit": ("felton2021",),
    "reactions-currybo": (),
    "reactions-olympus": ("hase2021",),
    "reactions-provenance": (),
    "matbench": ("dunn2020matbench",),
    "jarvis": ("choudhary2020jarvis",),
}


def bibtex(keys: Iterable[str]) -> str:
    """The entries of `keys`, in that order, each once, separated by a blank line."""
    return "\n".join(ENTRIES[k] for k in dict.fromkeys(keys))


def default_keys() -> list[str]:
    """The tool and the three papers (what `labreplay cite` prints without a store)."""
    return [TOOL, *(k for keys in SUITE_PAPERS.values() for k in keys)]


def _sources_in(text: str, folders: dict[str, str]) -> set[str]:
    """Manifest sources named in `text`: a data file path under a source's folder, or a
    source name as a key of a `dataset_hashes` mapping (campaign specs)."""
    found = {name for folder, name in folders.items() if f'"{folder}/' in text}
    for block in re.findall(r'"dataset_hashes":\s*\{([^{}]*)\}', text):
        found.update(json.loads("{" + block + "}"))
    return found


def store_usage(path: str | Path) -> tuple[list[str], list[str]]:
    """(suites with runs, data sources their specs and stored inputs read) of a store."""
    from labreplay.records import manifest
    from labreplay.store.sqlite import Store

    folders = {s.folder: s.name for s in manifest.sources()}
    sources: set[str] = set()
    with Store(path, readonly=True) as store:
        runs = store.runs()
        suites = sorted({r.suite for r in runs})
        for spec_hash in sorted({r.spec_hash for r in runs}):
            body = store.get_spec(spec_hash)
            sources |= _sources_in(body, folders)
            # inputs a spec names by hash (a conditions question file) are stored contents
            for digest in re.findall(r'"([0-9a-f]{64})"', body):
                content = store.content(digest)
                if content is not None:
                    sources |= _sources_in(content.decode("utf-8", "replace"), folders)
        for run in runs:
            digest = run.provenance.get("question_file_sha256")
            if isinstance(digest, str):
                content = store.content(digest)
                if content is not None:
                    sources |= _sources_in(content.decode("utf-8", "replace"), folders)
    known = set(manifest.source_names())
    return suites, sorted(s for s in sources if s in known)


def store_keys(suites: Sequence[str], sources: Sequence[str]) -> list[str]:
    """The tool, the papers of `suites` and the entries of `sources`."""
    keys = [TOOL, *(k for s in suites for k in SUITE_PAPERS.get(s, ()))]
    return keys + [k for s in sources for k in SOURCE_ENTRIES.get(s, ())]


def uncited(sources: Sequence[str]) -> list[str]:
    """Sources used that have no BibTeX entry here (cite them as `labreplay data list` says)."""
    return [s for s in sources if not SOURCE_ENTRIES.get(s)]


__all__ = [
    "ENTRIES",
    "SOURCE_ENTRIES",
    "SUITE_PAPERS",
    "TOOL",
    "bibtex",
    "default_keys",
    "store_keys",
    "store_usage",
    "uncited",
]
