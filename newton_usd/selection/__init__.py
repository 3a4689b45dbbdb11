"""Views by prim pattern over the worlds of a simulation, for robot learning (the tensor API's shape).

``ArticulationView(sim, "/World/envs/env_*/Robot").get_dof_positions()`` is a ``(worlds, dofs)`` Warp array;
writes take an ``indices`` mask of the rows to change (resetting some environments). ``ParticleView(sim,
"/World/Cloth*").get_positions()`` is a ``(rows, points, 3)`` array of deformables' or grains' points.
``SimulationView`` gives the seed design's key/value accessors (``get_model_attr``, ``set_state_attr``, ...) for
user-extended arrays.
"""

from .articulation_view import ArticulationView
from .contact_view import RigidContactView
from .particle_view import ParticleView
from .rigid_body_view import RigidBodyView
from .simulation_view import SimulationView

__all__ = ["ArticulationView", "ParticleView", "RigidBodyView", "RigidContactView", "SimulationView"]
