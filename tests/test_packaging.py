"""platform/ is a source root: the stdlib ``platform`` module must win everywhere."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def test_no_platform_package():
    assert not (REPO / "platform" / "__init__.py").exists()


def test_stdlib_platform_from_repo_root():
    code = "import platform, xlt; print(platform.system(), platform.__file__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    system, path = out.split()
    assert system and not path.startswith(str(REPO))


def test_stdlib_platform_inside_ray_worker(ray_cluster):
    @ray_cluster.remote
    def probe() -> tuple[str, str]:
        import platform

        import xlt

        return platform.python_version(), xlt.__file__

    version, xlt_file = ray_cluster.get(probe.remote())
    assert version == __import__("platform").python_version()
    assert xlt_file.startswith(str(REPO / "platform" / "xlt"))
