"""Find the question file a conditions spec names, so a spec is enough to run.

A conditions spec holds its question file's sha256, not the questions. `run` without
`questions=PATH` takes the file the compiler attached to the spec (`attached_files`, outside
the hash) when its bytes still match, else the copy a results store keeps content-addressed
under that sha256 (the runner stores every file a spec attaches),
written to a private temporary file for the run's workers to read.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from labreplay.errors import SpecError
from labreplay.sdk import sha256_bytes, sha256_file
from labreplay.sdk.engine import EnvironmentSpec, Store


def question_sha256(spec: EnvironmentSpec) -> str:
    """The sha256 of the question file `spec` was compiled into (SpecError if it names none)."""
    sha256 = spec.body.get("sha256")
    if spec.suite != "conditions" or not isinstance(sha256, str) or len(sha256) != 64:
        raise SpecError(
            f"spec {spec.spec_id}: not a conditions question-file spec (field 'sha256' is "
            f"{sha256!r})"
        )
    return sha256


def attached_questions(spec: EnvironmentSpec) -> Path | None:
    """The attached question file when it exists and its bytes match the spec."""
    sha256 = question_sha256(spec)
    where = spec.attached_files.get(sha256)
    if where is None:
        return None
    path = Path(where)
    try:
        return path if path.is_file() and sha256_file(path) == sha256 else None
    except OSError:
        return None


@contextmanager
def question_file_of(spec: EnvironmentSpec, store: Store) -> Iterator[Path]:
    """The path of `spec`'s question file for the length of the block: the attached file,
    else the store's copy (a temporary file removed afterwards); one SpecError line naming
    the spec and its sha256 when neither has it."""
    attached = attached_questions(spec)
    if attached is not None:
        yield attached
        return
    sha256 = question_sha256(spec)
    data = store.content(sha256)
    if data is None or sha256_bytes(data) != sha256:
        raise SpecError(
            f"spec {spec.spec_id}: question file sha256 {sha256[:16]}... is neither attached "
            f"to the spec nor kept in store {store.path}; pass questions=PATH"
        )
    with tempfile.TemporaryDirectory(prefix="labreplay-questions-") as tmp:
        path = Path(tmp) / f"questions-{sha256[:16]}.jsonl"
        path.write_bytes(data)
        yield path


__all__ = ["attached_questions", "question_file_of", "question_sha256"]
