"""The domain layer imports neither reflex nor discord."""

from __future__ import annotations

import subprocess
import sys

CHECK = r"""
import importlib, pkgutil, sys
import grobot.core
for mod in pkgutil.walk_packages(grobot.core.__path__, "grobot.core."):
    importlib.import_module(mod.name)
bad = sorted(m for m in sys.modules if m.split(".")[0] in {"reflex", "discord"})
print(",".join(bad))
"""


def test_grobot_core_imports_neither_reflex_nor_discord(grobot_env):
    result = subprocess.run([sys.executable, "-c", CHECK], env=grobot_env.environ(), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"grobot.core pulled in: {result.stdout.strip()}"
