"""SolverMuJoCo: C MuJoCo on the CPU, MuJoCo-Warp on Warp devices."""

from .solver_mujoco import SolverMuJoCo

__all__ = ["SolverMuJoCo"]
