"""The package's shape (benchmarks/module_map.py): no import cycle among newton_usd's modules, and no module
over MAX_LINES lines unless it is on the script's commented allow-list (docs/architecture.md)."""

import importlib.util
import subprocess
import sys

from conftest import REPO

MODULE_MAP = REPO / "benchmarks" / "module_map.py"


def module_map(*args):
    return subprocess.run([sys.executable, str(MODULE_MAP), *args], capture_output=True, text=True, timeout=120)


def test_newton_usd_has_no_import_cycle_and_no_overlong_module():
    r = module_map()
    assert r.returncode == 0, r.stdout + r.stderr
    assert ", 0 cycles" in r.stdout
    assert "too long" not in r.stdout


def test_each_allow_listed_module_is_long_and_says_its_one_job():
    """An entry of the allow-list is a module still over the limit, with the job that needs its length: one that
    was cut (or shrank) leaves the list rather than staying allowed to grow back."""
    spec = importlib.util.spec_from_file_location("module_map", MODULE_MAP)
    module_map_py = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module_map_py)
    for path, job in module_map_py.LONG_MODULES.items():
        lines = len((REPO / path).read_text().splitlines())
        assert lines > module_map_py.MAX_LINES, f"{path} has {lines} lines: take it off the allow-list"
        assert job.strip(), f"{path}: say which one job needs its length"


def _package(root, files):
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_a_cycle_is_named_with_its_circle(tmp_path):
    pkg = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from .b import g\n",
        "b.py": "def g():\n    from .sub import c  # a lazy import is an import too\n",
        "sub/__init__.py": "",
        "sub/c.py": "from .. import a\n",
        "d.py": "from . import a\n",  # (imports into the cycle, not part of it)
    })  # fmt: skip
    r = module_map("--root", str(pkg))
    assert r.returncode == 1
    assert ", 1 cycle" in r.stdout
    assert "cycle: pkg.a -> pkg.b -> pkg.sub.c -> pkg.a" in r.stdout
    assert "pkg.d" not in r.stdout.split("import graph")[1]


def test_a_long_module_fails_unless_allowed(tmp_path):
    pkg = _package(tmp_path, {"__init__.py": "", "big.py": "x = 1\n" * 30, "small.py": "y = 2\n"})
    r = module_map("--root", str(pkg), "--max-lines", "20")
    assert r.returncode == 1
    assert "too long: pkg/big.py has 30 lines (> 20)" in r.stdout
    assert "small.py" not in r.stdout.split("import graph")[1]
    assert module_map("--root", str(pkg), "--max-lines", "30").returncode == 0
