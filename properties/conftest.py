from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from profiles import load_profile  # the path above makes it importable

load_profile()
