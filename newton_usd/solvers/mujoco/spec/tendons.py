"""MjcTendon prims as MuJoCo tendons (fixed: a joint coupling; spatial: a path of sites and wrapping geoms)."""

from __future__ import annotations

from .values import ElementNames, force_space_solref, mj_limited


def add_tendons(spec, model, joint_handles, geom_of, site_names, diag) -> tuple[dict, list]:
    """Tendons (``model.mujoco.tendon``): fixed ones on joints, spatial ones through sites and around
    sphere/cylinder geoms (with side sites and pulley branches), with their limits, spring, damping and
    friction; returns (tendon path -> MuJoCo name, the soft limits: ``[(tendon, stiffness, damping)]`` of the
    tendons whose limit is given in force space, PhysX's: :func:`soft_tendon_limits` after compiling). ``geom_of``:
    shape label -> MuJoCo geom name."""
    names, unique, soft = {}, ElementNames(model), []
    joint_of = {label: j for j, label in enumerate(model.joint_label)}
    for entry in getattr(model.mujoco, "tendon", None) or []:
        v = entry["values"]
        wrap, side = entry.get("wrap", []), entry.get("sideSites", [])
        fixed = v.get("type", "spatial") == "fixed"
        indices = [int(i) for i in (v.get("path:indices") or range(len(wrap)))]
        segments = [int(i) for i in (v.get("path:segments") or [0] * len(indices))]
        divisors = list(v.get("path:divisors") or [1.0])
        side_idx = [int(i) for i in (v.get("sideSites:indices") or [-1] * len(indices))]
        coef = list(v.get("path:coef") or [1.0] * len(indices))
        steps = []  # ("joint"|"site"|"geom"|"pulley", name, extra)
        if not fixed and divisors and divisors[0] != 1.0:
            steps.append(("pulley", None, divisors[0]))
        segment = 0
        for k, idx in enumerate(indices):
            target = wrap[idx] if 0 <= idx < len(wrap) else None
            if not fixed and k < len(segments) and segments[k] != segment:
                segment = segments[k]
                steps.append(("pulley", None, divisors[segment] if segment < len(divisors) else 1.0))
            if fixed and target in joint_of and joint_handles[joint_of[target]] is not None:
                steps.append(("joint", joint_handles[joint_of[target]].name, float(coef[k]) if k < len(coef) else 1.0))
            elif not fixed and target in site_names:
                steps.append(("site", site_names[target], None))
            elif not fixed and target in geom_of:
                s_i = side_idx[k] if k < len(side_idx) else -1
                steps.append(("geom", geom_of[target], site_names.get(side[s_i], "") if 0 <= s_i < len(side) else ""))
            else:
                steps = None
                break
        if not steps:
            why = "tendon whose path elements are not all simulated joints, sites or geoms: not built"
            diag.add(why, entry["path"])
            continue
        tendon = spec.add_tendon(name=unique(entry["path"]))
        for kind, name, extra in steps:
            if kind == "joint":
                tendon.wrap_joint(name, extra)
            elif kind == "site":
                tendon.wrap_site(name)
            elif kind == "geom":
                tendon.wrap_geom(name, extra)
            else:
                tendon.wrap_pulley(extra)
        tendon.limited = mj_limited(v["limited"])
        tendon.range = [v["range:min"], v["range:max"]]
        tendon.stiffness = [v["stiffness"], 0.0, 0.0]
        tendon.damping = [v["damping"], 0.0, 0.0]
        tendon.frictionloss = v["frictionloss"]
        tendon.armature = v["armature"]
        tendon.margin = v["margin"]
        tendon.springlength = list(v["springlength"])
        tendon.solref_limit, tendon.solimp_limit = list(v["solreflimit"]), list(v["solimplimit"])
        tendon.solref_friction, tendon.solimp_friction = list(v["solreffriction"]), list(v["solimpfriction"])
        tendon.actfrclimited = mj_limited(v["actuatorfrclimited"])
        tendon.actfrcrange = [v["actuatorfrcrange:min"], v["actuatorfrcrange:max"]]
        tendon.group = int(v["group"])
        names[entry["path"]] = tendon.name
        if entry.get("limit_gains") is not None:
            soft.append((tendon, *entry["limit_gains"]))
    return names, soft


def soft_tendon_limits(mj_model, soft) -> None:
    """The limits of ``soft`` (:func:`add_tendons`' ``[(tendon, stiffness, damping)]``) as their ``solref``, from the
    tendons' inverse weights at qpos0 (:func:`.values.force_space_solref`)."""
    for tendon, ke, kd in soft:
        tid = tendon.id
        solref = force_space_solref(ke, kd, mj_model.tendon_invweight0[tid], mj_model.tendon_solimp_lim[tid][1])
        mj_model.tendon_solref_lim[tid] = solref
        tendon.solref_limit = solref
