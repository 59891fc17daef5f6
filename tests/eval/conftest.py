"""The corpus the documented rules and llm figures were measured on: the first eight labeled
stores of examples/eval, copied (bytes and mtimes) so that stores added later for other
stages (scored in test_eval_examples.py) do not move them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "eval"
FIRST_EIGHT = ("claude-code-team", "claude-code-webapp", "cline-shop", "deepcode-billing", "deepcode-pipeline", "generic-ops", "serena-crossref", "serena-goasync")


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    corpus = tmp_path / "examples"
    for name in FIRST_EIGHT:
        shutil.copytree(EXAMPLES / name, corpus / name)
        shutil.copy2(EXAMPLES / f"{name}.labels.toml", corpus / f"{name}.labels.toml")
    return corpus
