"""Regenerate src/labreplay/records/checksums/*.sha256 from a data dir's SHA256SUMS.

Usage: python scripts/make_checksums.py DATA_DIR
Every file listed in DATA_DIR/SHA256SUMS must belong to exactly one source folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

from labreplay.records.manifest import source_raw


def main(data_dir: Path) -> None:
    out_dir = Path(__file__).resolve().parents[1] / "src/labreplay/records/checksums"
    out_dir.mkdir(parents=True, exist_ok=True)
    lines: dict[str, list[str]] = {s.name: [] for s in source_raw()}
    for raw in (data_dir / "SHA256SUMS").read_text().splitlines():
        digest, path = raw.split(None, 1)
        path = path.strip().removeprefix("./")
        owners = [s for s in source_raw() if path == s.folder or path.startswith(s.folder + "/")]
        if len(owners) != 1:
            raise SystemExit(f"{path}: belongs to {len(owners)} sources")
        size = (data_dir / path).stat().st_size
        lines[owners[0].name].append(f"{digest}  {size}  {path}")
    for name, entries in lines.items():
        (out_dir / f"{name}.sha256").write_text(
            "\n".join(sorted(entries, key=lambda e: e.split(None, 2)[2])) + "\n"
        )
        print(f"{name}: {len(entries)} files")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
