"""Write the docs page "The papers side by side" (papers.md) from the suites' `papers.py`.

The MkDocs hook in `scripts/mkdocs_hooks.py` calls `render()` at build time, so the published
figures on the page are the constants the report quotes, and this tool's figures are never
typed: the page gives the commands that produce them. `python scripts/papers_page.py --out
FILE` writes the same page to a file.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def render() -> str:
    from labreplay.report.papers import paper_markdown
    from labreplay.suites.campaign.papers import PAPER as CAMPAIGN
    from labreplay.suites.conditions.papers import PAPER as CONDITIONS
    from labreplay.suites.configsearch.papers import PAPER as CONFIGSEARCH

    return paper_markdown([CAMPAIGN, CONDITIONS, CONFIGSEARCH])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.write_text(render(), encoding="utf-8")


if __name__ == "__main__":
    main()
