"""The wheel's build hook: compiles ``golem_core/_native/_speedups.c`` when it can (ADR 0149).

``golem_core._native._speedups`` is the JSON fast decoder compiled: optional, like orjson. This
hook builds it with setuptools' ``build_ext`` (the compiler and flags of the Python it
builds for) into the wheel, which is then tagged for that interpreter; for an editable
install (``pip install -e``) it writes the module beside ``_speedups.c`` (ignored by git).
Where it cannot (no C compiler, an interpreter without headers) it says why and builds
the pure-Python wheel, which decodes to the same values, only slower.

Environment: ``GOLEM_PURE=1`` builds the pure-Python wheel without trying (the Pyodide
suite does: WebAssembly needs ``py3-none-any``); ``GOLEM_REQUIRE_SPEEDUPS=1`` makes a
failed compile fail the build (``.ci/run``, so that CI never tests the fallback alone
by accident).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = "golem_core/_native/_speedups.c"
MODULE = "golem_core._native._speedups"


def _compile(source: Path, out_dir: Path) -> Path:
    """``source`` compiled to ``MODULE``'s extension file under ``out_dir``."""
    from setuptools import Distribution, Extension  # the build's own requirement

    digest = hashlib.sha256(source.read_bytes()).hexdigest()  # tests/test_speedups.py
    extension = Extension(
        MODULE, [str(source)], define_macros=[("GOLEM_SOURCE_SHA256", f'"{digest}"')]
    )
    dist = Distribution({"name": "golem-speedups", "ext_modules": [extension]})
    cmd: Any = dist.get_command_obj("build_ext")
    with tempfile.TemporaryDirectory() as temp:
        cmd.build_lib = str(out_dir)
        cmd.build_temp = temp
        cmd.ensure_finalized()
        cmd.run()
    built = out_dir / cmd.get_ext_filename(MODULE)
    if not built.is_file():
        raise RuntimeError(f"build_ext wrote no {built}")
    return built


class SpeedupsHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or os.environ.get("GOLEM_PURE") == "1":
            return
        root = Path(self.root)
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        self._temp = tempfile.mkdtemp(prefix="golem-speedups-")  # until ``finalize``
        try:
            built = _compile(root / SOURCE, Path(self._temp))
            if version == "editable":  # the package's sources are imported in place
                # a rename, never a write over the file: a running process may have it mapped
                staged = root / "golem_core" / "_native" / f".{built.name}.tmp"
                shutil.copyfile(built, staged)
                os.replace(staged, root / "golem_core" / "_native" / f"_speedups{suffix}")
        except Exception as e:  # a missing compiler shows as any of several errors
            if version == "editable":  # never leave an older build to be imported
                (root / "golem_core" / "_native" / f"_speedups{suffix}").unlink(missing_ok=True)
            if os.environ.get("GOLEM_REQUIRE_SPEEDUPS") == "1":
                raise RuntimeError(f"GOLEM_REQUIRE_SPEEDUPS=1 but {SOURCE} did not compile") from e
            self.app.display_warning(
                f"golem: {SOURCE} did not compile ({type(e).__name__}: {e}); building the "
                "pure-Python wheel (the same values, a slower JSON decoder)"
            )
            return
        if version != "editable":
            build_data["force_include"][str(built)] = f"golem_core/_native/_speedups{suffix}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        temp = getattr(self, "_temp", None)
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
