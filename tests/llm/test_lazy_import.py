"""Importing the adapter must not import litellm: only a model call may pay for it."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_client_module_does_not_import_litellm() -> None:
    """daemon.llm.litellm_client and the fakes load without litellm in sys.modules."""
    code = (
        "import sys, daemon.llm.litellm_client, daemon.llm.fakes, daemon.llm.translate\n"
        "assert 'litellm' not in sys.modules, 'litellm imported'\n"
        "assert 'openai' not in sys.modules, 'openai imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
