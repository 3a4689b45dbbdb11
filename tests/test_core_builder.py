import math

import numpy as np
import pytest

from newton_usd import GeoType, JointType, Mesh, ModelBuilder
from newton_usd.core import inertia


def unit_cube_mesh(h=0.5):
    v = np.array([[x, y, z] for x in (-h, h) for y in (-h, h) for z in (-h, h)])
    # 12 outward-facing triangles of the cube with corners indexed by (x, y, z) bits.
    f = [
        (0, 1, 3),
        (0, 3, 2),
        (4, 6, 7),
        (4, 7, 5),
        (0, 4, 5),
        (0, 5, 1),
        (2, 3, 7),
        (2, 7, 6),
        (0, 2, 6),
        (0, 6, 4),
        (1, 5, 7),
        (1, 7, 3),
    ]
    return Mesh(v, np.array(f))


def test_box_and_mesh_cube_have_the_same_mass_properties():
    m_box, c_box, i_box = inertia.box(1000.0, 0.5, 0.5, 0.5)
    mesh = unit_cube_mesh()
    m_mesh, c_mesh, i_mesh = inertia.mesh(1000.0, mesh.vertices, mesh.indices)
    assert m_box == pytest.approx(1000.0)
    assert m_mesh == pytest.approx(m_box)
    np.testing.assert_allclose(c_mesh, 0, atol=1e-12)
    np.testing.assert_allclose(i_mesh, i_box, atol=1e-9)
    np.testing.assert_allclose(np.diag(i_box), 1000.0 / 6.0)


def test_capsule_tends_to_sphere_and_cylinder_formulas():
    m, _, i = inertia.capsule(1.0, 1.0, 0.0)
    ms, _, is_ = inertia.sphere(1.0, 1.0)
    assert m == pytest.approx(ms)
    np.testing.assert_allclose(i, is_, rtol=1e-12)
    m, _, i = inertia.cylinder(2.0, 0.1, 1.0)
    assert m == pytest.approx(2.0 * math.pi * 0.01 * 2.0)
    assert i[2, 2] == pytest.approx(0.5 * m * 0.01)


def test_shapes_add_mass_with_parallel_axis():
    b = ModelBuilder()
    body = b.add_body(((0, 0, 0), (0, 0, 0, 1)))
    b.add_shape_sphere(body, ((1, 0, 0), (0, 0, 0, 1)), radius=0.1, density=1000.0)
    b.add_shape_sphere(body, ((-1, 0, 0), (0, 0, 0, 1)), radius=0.1, density=1000.0)
    m = b.finalize("cpu")
    ms = 1000.0 * 4 / 3 * math.pi * 0.001
    assert m.body_mass.numpy()[0] == pytest.approx(2 * ms, rel=1e-6)
    np.testing.assert_allclose(m.body_com.numpy()[0], 0, atol=1e-7)
    i = m.body_inertia.numpy()[0]
    assert i[1, 1] == pytest.approx(2 * (0.4 * ms * 0.01 + ms), rel=1e-5)
    assert i[0, 0] == pytest.approx(2 * 0.4 * ms * 0.01, rel=1e-5)


def test_finalize_lays_out_joint_coordinates_like_newton():
    b = ModelBuilder()
    a = b.add_body(((0, 0, 1), (0, 0, 0, 1)), mass=1.0, inertia=np.eye(3), label="/a")
    c = b.add_body(((0, 0, 2), (0, 0, 0, 1)), mass=1.0, inertia=np.eye(3), label="/c")
    d = b.add_body(((0, 0, 3), (0, 0, 0, 1)), mass=1.0, inertia=np.eye(3), label="/d")
    b.add_joint_free(a, label="/free")
    b.add_joint_revolute(
        a,
        c,
        ((0, 0, 0.5), (0, 0, 0, 1)),
        ((0, 0, -0.5), (0, 0, 0, 1)),
        axis=(0, 1, 0),
        limit_lower=-1.0,
        limit_upper=1.0,
        target_ke=10.0,
        label="/rev",
    )
    b.add_joint_ball(c, d, ((0, 0, 0.5), (0, 0, 0, 1)), ((0, 0, -0.5), (0, 0, 0, 1)), label="/ball")
    b.add_shape_box(a, hx=0.1, hy=0.1, hz=0.1)
    m = b.finalize("cpu")
    assert m.joint_type.numpy().tolist() == [JointType.FREE, JointType.REVOLUTE, JointType.BALL]
    assert m.joint_q_start.numpy().tolist() == [0, 7, 8, 12]
    assert m.joint_qd_start.numpy().tolist() == [0, 6, 7, 10]
    assert m.joint_coord_count == 12 and m.joint_dof_count == 10
    np.testing.assert_allclose(m.joint_q.numpy()[:7], [0, 0, 1, 0, 0, 0, 1])
    assert m.joint_label == ["/free", "/rev", "/ball"]
    assert m.body_label == ["/a", "/c", "/d"]
    assert m.shape_type.numpy().tolist() == [GeoType.BOX]
    assert m.joint_target_mode.numpy()[6] == 1  # position drive on the revolute DOF
    assert m.joint_limit_lower.numpy()[6] == pytest.approx(-1.0)
    s = m.state()
    assert s.body_q.shape == (3,) and s.joint_q.shape == (12,)


def test_joint_q_from_body_q_reads_the_authored_angle():
    b = ModelBuilder()
    rot = (0.0, math.sin(0.25), 0.0, math.cos(0.25))  # 0.5 rad about Y
    body = b.add_body(((0, 0, 1), rot), mass=1.0, inertia=np.eye(3))
    b.add_joint_revolute(-1, body, ((0, 0, 1), (0, 0, 0, 1)), None, axis=(0, 1, 0))
    b.joint_q_from_body_q()
    assert b.joint_q[0][0] == pytest.approx(0.5)


def test_mesh_shape_needs_a_mesh():
    b = ModelBuilder()
    body = b.add_body()
    with pytest.raises(ValueError):
        b.add_shape(body, GeoType.MESH)


def test_ellipsoid_tends_to_the_sphere():
    m, _, i = inertia.ellipsoid(1000.0, 0.1, 0.1, 0.1)
    ms, _, is_ = inertia.sphere(1000.0, 0.1)
    assert m == pytest.approx(ms)
    np.testing.assert_allclose(i, is_, rtol=1e-12)
    m, _, i = inertia.ellipsoid(1.0, 1.0, 2.0, 3.0)
    assert i[0, 0] == pytest.approx(m / 5 * 13) and i[2, 2] == pytest.approx(m / 5 * 5)
