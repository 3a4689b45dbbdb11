"""Cameras and lights as UsdGeom cameras and UsdLux lights on their bodies."""

from __future__ import annotations

import math

import mujoco
import numpy as np
from pxr import Gf, UsdGeom, UsdLux

from ...core.quat import wxyz_to_xyzw
from .prims import mjcf_name, quat_from_to, set_xform, warn_tracking

_VERTICAL_APERTURE = 20.955  # mm, USD's default horizontal aperture; the focal length then gives fovy


def write_cameras(stage, m, body_path, names, diag):
    """MJCF cameras as UsdGeom.Camera prims on their bodies (both look along their -Z with +Y up): the
    vertical field of view (or the sensor size and focal length when the MJCF gives them), the aspect of
    the camera's resolution, orthographic projection, and clipping from MuJoCo's znear/zfar."""
    extent = float(m.stat.extent)
    for c in range(m.ncam):
        path = names.child(body_path[int(m.cam_bodyid[c])], mjcf_name(m, mujoco.mjtObj.mjOBJ_CAMERA, c, "camera"))
        camera = UsdGeom.Camera.Define(stage, path)
        set_xform(camera.GetPrim(), (m.cam_pos[c].copy(), wxyz_to_xyzw(m.cam_quat[c])))
        res = m.cam_resolution[c]
        aspect = float(res[0]) / float(res[1]) if res[0] > 0 and res[1] > 0 else 1.0
        sensor, focal = m.cam_sensorsize[c], m.cam_intrinsic[c][:2]
        if int(m.cam_projection[c]) == int(mujoco.mjtProjection.mjPROJ_ORTHOGRAPHIC):
            camera.CreateProjectionAttr(UsdGeom.Tokens.orthographic)
            vertical = 10.0 * float(m.cam_fovy[c])  # tenths of a stage unit: fovy is the view's height here
        elif sensor[1] > 0 and focal[1] > 0:  # a physical camera: sensor size and focal length in meters
            vertical = 1000.0 * float(sensor[1])
            aspect = float(sensor[0] / sensor[1])
            camera.CreateFocalLengthAttr(1000.0 * float(focal[1]))
        else:
            vertical = _VERTICAL_APERTURE
            camera.CreateFocalLengthAttr(0.5 * vertical / math.tan(0.5 * math.radians(float(m.cam_fovy[c]))))
        camera.CreateVerticalApertureAttr(vertical)
        camera.CreateHorizontalApertureAttr(vertical * aspect)
        camera.CreateClippingRangeAttr(Gf.Vec2f(float(m.vis.map.znear) * extent, float(m.vis.map.zfar) * extent))
        warn_tracking(m.cam_mode[c], "camera", path, diag)


def write_lights(stage, m, body_path, names, diag):
    """MJCF lights as UsdLux lights on their bodies, shining along their -Z: directional lights as
    DistantLight, spot lights as SphereLight with a cone (ShapingAPI), point lights as SphereLight; the
    colour is the diffuse colour, the intensity its brightest component (or MuJoCo's ``intensity``)."""
    for i in range(m.nlight):
        path = names.child(body_path[int(m.light_bodyid[i])], mjcf_name(m, mujoco.mjtObj.mjOBJ_LIGHT, i, "light"))
        kind = int(m.light_type[i])
        if kind == int(mujoco.mjtLightType.mjLIGHT_IMAGE):
            diag.add("image-based lights are not converted", path)
            continue
        if kind == int(mujoco.mjtLightType.mjLIGHT_DIRECTIONAL):
            light = UsdLux.DistantLight.Define(stage, path)
        else:
            light = UsdLux.SphereLight.Define(stage, path)
            light.CreateRadiusAttr(float(m.light_bulbradius[i]))
            if kind == int(mujoco.mjtLightType.mjLIGHT_SPOT):
                UsdLux.ShapingAPI.Apply(light.GetPrim()).CreateShapingConeAngleAttr(float(m.light_cutoff[i]))
        direction = quat_from_to((0.0, 0.0, -1.0), m.light_dir[i])
        set_xform(light.GetPrim(), (m.light_pos[i].copy(), direction))
        diffuse = np.asarray(m.light_diffuse[i], dtype=np.float64)
        peak = float(diffuse.max())
        light.CreateColorAttr(Gf.Vec3f(*map(float, diffuse / peak)) if peak > 0 else Gf.Vec3f(1.0))
        light.CreateIntensityAttr(float(m.light_intensity[i]) if m.light_intensity[i] > 0 else peak)
        UsdLux.ShadowAPI.Apply(light.GetPrim()).CreateShadowEnableAttr(bool(m.light_castshadow[i]))
        if not m.light_active[i]:
            light.CreateVisibilityAttr(UsdGeom.Tokens.invisible)
        warn_tracking(m.light_mode[i], "light", path, diag)
