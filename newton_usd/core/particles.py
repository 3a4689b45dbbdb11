"""Particles in the builder: each prim's points (a granular Points prim's grains) as a run of particles, with the
per-particle values a solver reads (its namespace's attributes: ``"mpm:friction"``), NaN where a prim sets none."""

from __future__ import annotations

import dataclasses

import numpy as np
import warp as wp

from .deformables import tetrahedron_indices, triangle_indices


def add_particles(builder, label: str, pos, vel, mass, radius, attributes: dict | None = None) -> tuple[int, int]:
    """Add the particles of the prim ``label`` to ``builder`` (its points: positions and velocities in world, m and
    m/s, masses in kg, radii in m; ``attributes``: "namespace:name" -> per-particle values of a solver's, e.g.
    ``"mpm:friction"``; a particle of a prim that does not set one gets NaN: the solver's default). Returns their run
    ``(first, end)``."""
    builder._check_not_replicated()
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


def particle_runs(groups: dict, count: int, num_worlds: int) -> list:
    """Every world's run of every particle prim, world after world: ``(label, first, end, world)``. ``groups`` (the
    builder's ``particle_groups``) holds world 0's runs and the runs of the other worlds' prims of their own (an
    environment's); a world's copy of a prim that kept world 0's label (``worlds=N``) has that label."""
    per_world = count // max(1, num_worlds)
    by_run = {tuple(run): label for label, run in groups.items()}
    first_world = sorted((run, label) for label, run in groups.items() if run[0] < per_world)
    out = []
    for w in range(num_worlds):
        for (first, end), label in first_world:
            run = (first + w * per_world, end + w * per_world)
            out.append((by_run.get(run, label), *run, w))
    return out


def world_particles(model, view, world: int, lo: int, hi: int) -> None:
    """World ``world``'s particles of ``model`` (its rows ``lo .. hi``) onto its one-world ``view``
    (:meth:`~newton_usd.core.model.Model.world_view`), indexed from 0: the per-particle arrays sliced, each prim's run,
    its cloth and volume records and their elements rebased."""
    view.particle_count = hi - lo
    for name in ("particle_q", "particle_qd", "particle_mass", "particle_radius"):
        setattr(view, name, getattr(model, name)[lo:hi])
    view.particle_world = wp.zeros(hi - lo, dtype=wp.int32, device=model.device)
    view.particle_label = model.particle_label[lo:hi]
    view.particle_attributes = {name: values[lo:hi] for name, values in model.particle_attributes.items()}
    view.particle_runs = [(label, f - lo, e - lo, 0) for label, f, e, w in model.particle_runs if w == world]
    view.particle_groups = {label: (f, e) for label, f, e, _ in view.particle_runs}
    view.cloth = [dataclasses.replace(c, first=c.first - lo) for c in model.cloth if lo <= c.first < hi]
    view.volumes = [dataclasses.replace(v, first=v.first - lo) for v in model.volumes if lo <= v.first < hi]
    view.tri_indices = wp.array(triangle_indices(view.cloth), dtype=wp.int32, device=model.device)
    view.tet_indices = wp.array(tetrahedron_indices(view.volumes), dtype=wp.int32, device=model.device)
    view.tri_count, view.tet_count = len(view.tri_indices), len(view.tet_indices)
