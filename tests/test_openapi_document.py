"""The TypeScript client's types come from the OpenAPI document committed beside it
(clients/typescript/openapi.json): it must be the document the app serves today, or the
client's types describe an API that no longer exists."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _dump_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "dump_openapi", ROOT / "scripts" / "dump_openapi.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_openapi_document_is_the_apps() -> None:
    dump = _dump_script()
    committed = json.loads(dump.DOCUMENT.read_text(encoding="utf-8"))
    served = dump.openapi_document()
    # Parsed JSON is compared, so key order and whitespace do not count.
    changed = sorted(
        path
        for path in set(committed["paths"]) | set(served["paths"])
        if committed["paths"].get(path) != served["paths"].get(path)
    )
    assert committed == served, (
        "clients/typescript/openapi.json is not the app's OpenAPI document "
        f"(paths that differ: {changed or 'none; the schemas do'}). Run "
        "`python scripts/dump_openapi.py && (cd clients/typescript && npm run generate)` "
        "and commit both files."
    )


def test_the_document_is_written_sorted_and_newline_terminated() -> None:
    dump = _dump_script()
    text = dump.document_text({"b": 1, "a": {"d": 2, "c": 3}})
    assert text == '{\n  "a": {\n    "c": 3,\n    "d": 2\n  },\n  "b": 1\n}\n'
