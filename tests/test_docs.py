"""The docs site builds with warnings as errors: a broken link, a page in no table of contents, a malformed
docstring or an undocumented public name fails the test, naming it."""

import subprocess
import sys

import pytest

from conftest import REPO

pytest.importorskip("sphinx", reason="the docs extra (sphinx, myst-parser, furo) is not installed")


@pytest.mark.soak  # (a whole Sphinx build, autodoc of every module: minutes on 2 cores; .ci/run's second step runs it)
def test_the_docs_site_builds_without_warnings(tmp_path):
    html, doctrees = tmp_path / "html", tmp_path / "doctrees"
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d", str(doctrees)]
    r = subprocess.run(cmd + ["docs", str(html)], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"sphinx-build failed:\n{r.stderr[-6000:]}"
    # The pages a reader starts from, and the reference generated from the docstrings.
    for page in ("index", "getting_started", "usdsim/run", "schemas", "api/newton_usd.sim"):
        assert (html / f"{page}.html").is_file(), page
    api = (html / "api" / "newton_usd.sim.html").read_text()
    assert "Simulation" in api and "open" in api
