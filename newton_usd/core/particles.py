"""Particles in the builder: each prim's points (a granular Points prim's grains) as a run of particles, with the
per-particle values a solver reads (its namespace's attributes: ``"mpm:friction"``), NaN where a prim sets none."""

from __future__ import annotations

import numpy as np


def add_particles(builder, label: str, pos, vel, mass, radius, attributes: dict | None = None) -> tuple[int, int]:
    """Add the particles of the prim ``label`` to ``builder`` (its points: positions and velocities in world, m and
    m/s, masses in kg, radii in m; ``attributes``: "namespace:name" -> per-particle values of a solver's, e.g.
    ``"mpm:friction"``; a particle of a prim that does not set one gets NaN: the solver's default). Returns their run
    ``(first, end)``."""
    if label in builder.particle_groups:
        raise ValueError(f"{label}: its particles were already added")
    n = len(pos)
    if not (len(vel) == len(mass) == len(radius) == n):
        raise ValueError(f"{label}: {n} positions, {len(vel)} velocities, {len(mass)} masses, {len(radius)} radii")
    first = builder.particle_count
    attributes = attributes or {}
    for name, values in builder.particle_attributes.items():  # (earlier prims' names this one does not set)
        if name not in attributes:
            values.extend([np.nan] * n)
    for name, values in attributes.items():
        values = np.broadcast_to(np.asarray(values, dtype=np.float64), (n,))
        builder.particle_attributes.setdefault(name, [np.nan] * first).extend(values.tolist())
    builder.particle_q.extend(np.asarray(pos, dtype=np.float64).reshape(n, 3).tolist())
    builder.particle_qd.extend(np.asarray(vel, dtype=np.float64).reshape(n, 3).tolist())
    builder.particle_mass.extend(np.asarray(mass, dtype=np.float64).reshape(n).tolist())
    builder.particle_radius.extend(np.asarray(radius, dtype=np.float64).reshape(n).tolist())
    builder.particle_groups[label] = (first, first + n)
    return first, first + n
