"""MkDocs hook (mkdocs.yml `hooks:`): adds the CLI reference page, generated from the app at
build time, so it always matches the commands being documented, and the papers page, generated
from the published figures the report quotes (scripts/papers_page.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parent))

# the sibling script, found through the sys.path entry above
from cli_reference import render
from papers_page import render as render_papers


def on_files(files: Files, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, "cli.md", content=render()))
    files.append(File.generated(config, "papers.md", content=render_papers()))
    return files
