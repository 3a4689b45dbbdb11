"""The README's Python example runs as printed, on a copy of the sample stages, and does what it says."""

import re
import shutil
import subprocess
import sys

from pxr import Usd

from conftest import REPO, SAMPLES


def readme_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    assert len(blocks) == 1, "the README has one Python example"
    return blocks[0]


def test_the_readme_example_runs_and_writes_the_motion(tmp_path):
    code = readme_example()
    assert len(code.strip().splitlines()) <= 12, "a short example"
    shutil.copytree(SAMPLES, tmp_path / "sample_stages")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    out = Usd.Stage.Open(str(tmp_path / "cartpole.sim.usda"))
    # The output sublayers the source and holds the first pose and one time sample per frame on the cart's prim.
    assert out.GetRootLayer().subLayerPaths[0].endswith("cartpole.usda")
    cart = out.GetPrimAtPath("/CartPole/Cart").GetAttribute("xformOp:translate:physics")
    assert cart.GetTimeSamples() == [float(f) for f in range(121)]
    printed = r.stdout.splitlines()
    assert printed[-1].startswith("['/") and "/CartPole/Cart" in r.stdout  # the bodies' prim paths
