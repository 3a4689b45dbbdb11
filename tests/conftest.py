import pathlib

import pytest
import warp as wp

wp.config.log_level = wp.LOG_WARNING

REPO = pathlib.Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_stages"
SAMPLE_STAGES = sorted(p.name for p in SAMPLES.glob("*.usda"))


def has_cuda() -> bool:
    try:
        return wp.get_cuda_device_count() > 0
    except Exception:  # noqa: BLE001
        return False


def pytest_collection_modifyitems(config, items):
    if has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def samples():
    return SAMPLES


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    # Tests never write next to the sample stages.
    monkeypatch.chdir(tmp_path)
