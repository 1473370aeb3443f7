"""Write the HTTP API's OpenAPI document to clients/typescript/openapi.json, the source of
the TypeScript client's generated types (``npm run generate`` there turns it into
src/generated/api.ts). Run after changing a route or a model:

    .venv/bin/python scripts/dump_openapi.py && (cd clients/typescript && npm run generate)

tests/test_openapi_document.py fails while the committed document differs from the app's."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from episodic.config import Settings
from episodic.http.app import create_app
from episodic.service import Episodic

DOCUMENT = Path(__file__).resolve().parents[1] / "clients" / "typescript" / "openapi.json"


def openapi_document() -> dict[str, Any]:
    """The document the app serves at /openapi.json (it does not depend on the database)."""
    with tempfile.TemporaryDirectory() as tmp:
        mem = Episodic.open(f"sqlite:///{tmp}/openapi.db", settings=Settings(embedder="none"))
        try:
            return create_app(mem).openapi()
        finally:
            mem.close()


def document_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def main() -> int:
    DOCUMENT.write_text(document_text(openapi_document()), encoding="utf-8")
    print(f"wrote {DOCUMENT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
