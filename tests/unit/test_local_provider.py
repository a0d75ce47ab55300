"""The local model's OpenMP threads wait passively, however the process was started.

llama.cpp (xllamacpp) is built with OpenMP, whose threads spin between calls unless
``OMP_WAIT_POLICY`` says otherwise when the library loads. The provider sets it before
its lazy import; a module-level import of xllamacpp anywhere on the way would load the
library first and make the setting a no-op. A fresh process, so nothing is loaded yet.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests import HEAVY

PROBE = """
import os, sys
from niah.catalog.models import LOCAL_MODEL
from niah.models.providers import local_gemma
assert "xllamacpp" not in sys.modules, "xllamacpp loaded before the provider set its policy"
local_gemma.LocalGemmaProvider(LOCAL_MODEL)
gomp = [line for line in open("/proc/self/maps") if "libgomp" in line]
print(os.environ["OMP_WAIT_POLICY"], bool(gomp))
"""


@HEAVY  # loads the model: a second or two
def test_the_local_model_loads_with_passive_openmp_threads() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    probe = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    # The policy is set, and the OpenMP runtime it is meant for was loaded after it.
    assert probe.stdout.split()[-2:] == ["PASSIVE", "True"]
