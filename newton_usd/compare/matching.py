"""Matching the elements of two MuJoCo models: by name, else by place (bodies by world position and mass,
joints in order on matched bodies, geoms and sites within matched bodies by type, place and size)."""

from __future__ import annotations

import numpy as np

KINDS = ("body", "joint", "geom", "site", "actuator", "tendon", "equality", "mesh", "hfield")


# ---------------------------------------------------------------- matching
def obj_type(kind):
    import mujoco

    return getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}")


def count_of(m, kind) -> int:
    return {"body": m.nbody, "joint": m.njnt, "geom": m.ngeom, "site": m.nsite, "actuator": m.nu,
            "tendon": m.ntendon, "equality": m.neq, "mesh": m.nmesh, "hfield": m.nhfield}[kind]  # fmt: skip


def name_of(m, kind, i) -> str:
    import mujoco

    return mujoco.mj_id2name(m, obj_type(kind), i) or ""


def match_elements(native, ours) -> dict:
    """kind -> {native id: our id}: by name, then by place (see the module's docstring)."""
    import mujoco

    matches = {}
    for kind in KINDS:
        names_ours = {}
        for i in range(count_of(ours, kind)):
            names_ours.setdefault(name_of(ours, kind, i), []).append(i)
        pairs = {}
        for i in range(count_of(native, kind)):
            candidates = names_ours.get(name_of(native, kind, i) or None, [])
            if len(candidates) == 1:
                pairs[i] = candidates[0]
        matches[kind] = pairs
    body = matches["body"]
    body[0] = 0
    dn, do = mujoco.MjData(native), mujoco.MjData(ours)
    mujoco.mj_kinematics(native, dn)
    mujoco.mj_kinematics(ours, do)
    taken = set(body.values())
    for b in range(1, native.nbody):  # bodies: the nearest at qpos0 of the same mass
        if b in body:
            continue
        free = [c for c in range(1, ours.nbody) if c not in taken
                and abs(ours.body_mass[c] - native.body_mass[b]) <= 1e-5 * max(1.0, native.body_mass[b])]  # fmt: skip
        if free:
            c = min(free, key=lambda c: float(np.linalg.norm(do.xpos[c] - dn.xpos[b])))
            if np.linalg.norm(do.xpos[c] - dn.xpos[b]) < 1e-4:
                body[b] = c
                taken.add(c)
    _match_on_bodies(native, ours, matches["joint"], body, "jnt", lambda m, i: (int(m.jnt_type[i]),))
    for kind, prefix in (("geom", "geom"), ("site", "site")):
        _match_on_bodies(native, ours, matches[kind], body, prefix, _placement_key(prefix))
    for kind in ("mesh", "hfield"):  # through the geoms that use them (a converter may give each its own)
        through = _data_through_geoms(native, ours, matches["geom"], kind)
        named = {i: c for i, c in matches[kind].items() if i not in through and c not in set(through.values())}
        matches[kind] = through | named
    for kind in ("actuator", "tendon", "equality"):  # the rest in order
        pairs = matches[kind]
        rest_ours = [i for i in range(count_of(ours, kind)) if i not in set(pairs.values())]
        rest_native = [i for i in range(count_of(native, kind)) if i not in pairs]
        pairs.update(zip(rest_native, rest_ours, strict=False))
    return matches


DATA_GEOM_TYPE = {"mesh": 7, "hfield": 1}  # mjtGeom of the geoms whose geom_dataid points at one


def _data_through_geoms(native, ours, geoms, kind) -> dict:
    """Native mesh (or height field) id -> ours: the data of matched geoms of that type, first use first."""
    gtype, pairs, taken = DATA_GEOM_TYPE[kind], {}, set()
    for g, c in sorted(geoms.items()):
        i, j = int(native.geom_dataid[g]), int(ours.geom_dataid[c])
        if int(native.geom_type[g]) == gtype == int(ours.geom_type[c]) and i >= 0 and j >= 0:
            if i not in pairs and j not in taken:
                pairs[i] = j
                taken.add(j)
    return pairs


def data_copies(native, ours, matches, kind) -> set:
    """Our meshes (or height fields) that copy a matched one: used by a matched geom whose native geom's
    data is matched to another of ours (native shares one mesh between geoms, ours gives each its own)."""
    gtype, copies = DATA_GEOM_TYPE[kind], set()
    matched = set(matches[kind].values())
    for g, c in matches["geom"].items():
        i, j = int(native.geom_dataid[g]), int(ours.geom_dataid[c])
        if int(native.geom_type[g]) == gtype == int(ours.geom_type[c]) and i in matches[kind] and j not in matched:
            copies.add(j)
    return copies


def _placement_key(prefix):
    def key(m, i):
        return (int(getattr(m, f"{prefix}_type")[i]),)

    return key


def _match_on_bodies(native, ours, pairs, body, prefix, key):
    """Unmatched elements of matched bodies: of the same ``key`` (type), in order for joints, by the
    nearest place and size for geoms and sites (so that their order within a body does not count)."""
    taken = set(pairs.values())
    bodyid_n, bodyid_o = getattr(native, f"{prefix}_bodyid"), getattr(ours, f"{prefix}_bodyid")
    n_native = len(bodyid_n)
    for i in range(n_native):
        if i in pairs or int(bodyid_n[i]) not in body:
            continue
        c_body = body[int(bodyid_n[i])]
        free = [c for c in np.nonzero(bodyid_o == c_body)[0] if c not in taken and key(ours, c) == key(native, i)]
        if not free:
            continue
        if prefix == "jnt":
            c = free[0]
        else:
            pos_n, size_n = getattr(native, f"{prefix}_pos")[i], getattr(native, f"{prefix}_size")[i]

            def distance(c, pos_n=pos_n, size_n=size_n):
                return float(np.linalg.norm(getattr(ours, f"{prefix}_pos")[c] - pos_n)
                             + np.linalg.norm(getattr(ours, f"{prefix}_size")[c] - size_n))  # fmt: skip

            c = min(free, key=distance)
        pairs[i] = int(c)
        taken.add(int(c))
