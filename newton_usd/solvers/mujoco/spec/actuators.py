"""Actuators: a ``general`` actuator per driven DOF (the joint drives), and the MjcActuator prims."""

from __future__ import annotations

import mujoco
import numpy as np

from ....core.types import DriveMode
from .joints import UNLIMITED_EFFORT
from .values import ElementNames, mj_limited, mj_params


def add_drives(spec, model, a, dof_handles) -> list:
    """Joint drives: one ``general`` actuator per driven DOF, force ``ctrl - ke * q - kd * qdot`` (the solver
    sets ``ctrl = ke * target_pos + kd * target_vel``). Returns ``[(actuator, DOF)]``."""
    actuators = []
    for j in range(model.joint_count):
        for dof in range(int(a.joint_qd_start[j]), int(a.joint_qd_start[j + 1])):
            if int(a.joint_target_mode[dof]) == DriveMode.NONE or dof_handles[dof] is None:
                continue
            act = spec.add_actuator(name=dof_handles[dof].name + "_drive", target=dof_handles[dof].name)
            act.trntype = mujoco.mjtTrn.mjTRN_JOINT
            act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
            act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
            gain = np.zeros(10)
            gain[0] = 1.0
            bias = np.zeros(10)
            bias[1] = -float(a.joint_target_ke[dof])
            bias[2] = -float(a.joint_target_kd[dof])
            act.gainprm = gain
            act.biasprm = bias
            limit = float(a.joint_effort_limit[dof])
            if limit < UNLIMITED_EFFORT:
                act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
                act.forcerange = [-limit, limit]
            actuators.append((act, dof))
    return actuators


def native_actuator(spec) -> bool:
    """Whether a joint actuator (:class:`~newton_usd.core.actuators.ActuatorSpec`) is a MuJoCo ``general`` actuator
    exactly: a PD law, clamped at most to a maximum effort (MuJoCo's force range), without delay."""
    return spec.drive == "pd" and spec.delay_steps == 0 and all(kind == "max_effort" for kind, _ in spec.clamps)


def add_native_actuators(spec, model, a, dof_handles) -> list:
    """The joint actuators (NewtonActuator prims) that are MuJoCo actuators exactly (:func:`native_actuator`), on a
    DOF without a joint drive of its own: one ``general`` actuator each, force ``ctrl + const_effort - kp * q - kd *
    qdot`` within +-max effort (the solver sets ``ctrl = kp * target_pos + kd * target_vel``; MuJoCo's implicit
    integrators take ``kd`` implicitly). Returns ``[(actuator, model actuator index)]``; the others are applied as
    forces (:mod:`~newton_usd.solvers.mujoco.actuator_forces`)."""
    out = []
    joints = model.actuator_joint.numpy() if model.actuator_count else ()
    for i, (j, law) in enumerate(zip(joints, model.actuator_spec, strict=True)):
        dof = int(a.joint_qd_start[j])
        handle = dof_handles[dof]
        if not native_actuator(law) or handle is None or int(a.joint_target_mode[dof]) != DriveMode.NONE:
            continue
        act = spec.add_actuator(name=f"{handle.name}_actuator{i}", target=handle.name)
        act.trntype = mujoco.mjtTrn.mjTRN_JOINT
        act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
        gain, bias = np.zeros(10), np.zeros(10)
        gain[0] = 1.0
        bias[:3] = law.const_effort, -law.kp, -law.kd
        act.gainprm, act.biasprm = gain, bias
        limit = law.max_effort()
        if limit < UNLIMITED_EFFORT:
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.forcerange = [-limit, limit]
        out.append((act, i))
    return out


def add_mjc_actuators(spec, model, joint_handles, body_handles, diag, tendon_names=None, site_names=None):
    """MuJoCo actuators for the MjcActuator prims (``model.mujoco.actuator``) whose target is a simulated
    joint or body; returns their handles, in the order of ``model.mujoco.actuator`` (None: skipped)."""
    entries = getattr(model.mujoco, "actuator", None) or []
    joint_of = {label: j for j, label in enumerate(model.joint_label)}
    body_of = {label: b for b, label in enumerate(model.body_label)}
    handles, unique = [], ElementNames(model)
    for entry in entries:
        v = entry["values"]
        target = entry["target"][0] if entry["target"] else None
        act = None
        if target in joint_of and joint_handles[joint_of[target]] is not None:
            act = spec.add_actuator(target=joint_handles[joint_of[target]].name)
            act.trntype = mujoco.mjtTrn.mjTRN_JOINTINPARENT if v["jointInParent"] else mujoco.mjtTrn.mjTRN_JOINT
        elif target in body_of:
            act = spec.add_actuator(target=body_handles[body_of[target]].name)
            act.trntype = mujoco.mjtTrn.mjTRN_BODY
        elif tendon_names and target in tendon_names:
            act = spec.add_actuator(target=tendon_names[target])
            act.trntype = mujoco.mjtTrn.mjTRN_TENDON
        elif site_names and target in site_names:
            act = spec.add_actuator(target=site_names[target])
            act.trntype = mujoco.mjtTrn.mjTRN_SITE
            ref = entry.get("refSite") or []
            if ref and ref[0] in site_names:
                act.refsite = site_names[ref[0]]
        else:
            why = "no target" if target is None else "a spatial-tendon, fixed-joint or unknown target"
            diag.add(f"MjcActuator with {why} is not simulated yet", entry["path"])
            handles.append(None)
            continue
        act.name = unique(entry["path"])
        act.gaintype = getattr(mujoco.mjtGain, f"mjGAIN_{v['gainType'].upper()}")
        act.biastype = getattr(mujoco.mjtBias, f"mjBIAS_{v['biasType'].upper()}")
        act.dyntype = getattr(mujoco.mjtDyn, f"mjDYN_{v['dynType'].upper()}")
        act.gainprm, act.biasprm, act.dynprm = mj_params(v["gainPrm"]), mj_params(v["biasPrm"]), mj_params(v["dynPrm"])
        act.gear = mj_params(v["gear"], 6)
        act.ctrllimited, act.ctrlrange = mj_limited(v["ctrlLimited"]), [v["ctrlRange:min"], v["ctrlRange:max"]]
        act.forcelimited, act.forcerange = mj_limited(v["forceLimited"]), [v["forceRange:min"], v["forceRange:max"]]
        act.actlimited, act.actrange = mj_limited(v["actLimited"]), [v["actRange:min"], v["actRange:max"]]
        act.actdim = int(v["actDim"])
        act.actearly = int(bool(v["actEarly"]))
        act.group = int(v["group"])
        act.lengthrange = [v["lengthRange:min"], v["lengthRange:max"]]
        handles.append(act)
    return handles
