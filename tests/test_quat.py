import numpy as np
from pxr import Gf

from newton_usd.core import quat


def test_gf_roundtrip_keeps_real_part_last_inside():
    g = Gf.Quatd(0.5, 0.5, -0.5, 0.5)
    q = quat.gf_to_xyzw(g)
    np.testing.assert_allclose(q, [0.5, -0.5, 0.5, 0.5])
    assert quat.xyzw_to_gf(q, Gf.Quatd) == g


def test_mujoco_order_roundtrip_batched():
    q = np.random.default_rng(0).normal(size=(5, 4))
    np.testing.assert_allclose(quat.wxyz_to_xyzw(quat.xyzw_to_wxyz(q)), q)
    np.testing.assert_allclose(quat.xyzw_to_wxyz([1, 2, 3, 4]), [4, 1, 2, 3])


def test_rotation_matches_gf():
    g = Gf.Rotation(Gf.Vec3d(1, 2, 3).GetNormalized(), 70.0)
    q = quat.gf_to_xyzw(g.GetQuat())
    v = np.array([0.3, -1.0, 2.0])
    expected = np.array(g.TransformDir(Gf.Vec3d(*v)))
    np.testing.assert_allclose(quat.quat_rotate(q, v), expected, atol=1e-12)
    np.testing.assert_allclose(quat.quat_to_matrix(q) @ v, expected, atol=1e-12)
    np.testing.assert_allclose(quat.matrix_to_quat(quat.quat_to_matrix(q)), q * np.sign(q[3]), atol=1e-12)


def test_transform_inverse_composes_to_identity():
    a = (np.array([1.0, 2.0, 3.0]), quat.quat_from_axis_angle([0, 0, 1], 0.7))
    p, q = quat.transform_multiply(a, quat.transform_inverse(a))
    np.testing.assert_allclose(p, 0, atol=1e-12)
    np.testing.assert_allclose(np.abs(q), [0, 0, 0, 1], atol=1e-12)
