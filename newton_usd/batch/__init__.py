"""Many runs of ``usdsim``: sweeps over stages and ``--set`` overrides, on this machine's cores or on Ray.

``usdsim batch`` (:mod:`newton_usd.cli.batch`) and :func:`run_sweep` expand a :class:`Sweep` (:mod:`.spec`) into runs
(:mod:`.plan`), each run in a process of its own (:mod:`.launch`, :mod:`.worker`) on the local
executor (:mod:`.local_executor`) or as Ray tasks (:mod:`.ray_executor`), skip what ``resume`` finds
done (:mod:`.resume`), and write one table (:mod:`.table`).
"""

from .spec import Job, Sweep, load_sweep, sweep_from_dict
from .sweep import SweepResult, run_sweep

__all__ = ["Job", "Sweep", "SweepResult", "load_sweep", "run_sweep", "sweep_from_dict"]
