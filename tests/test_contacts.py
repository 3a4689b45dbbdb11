"""Contacts from SolverMuJoCo.update_contacts (every world, shape pairs by label, forces) and RigidContactView."""

import numpy as np
import pytest

from newton_usd.errors import NewtonUsdError
from newton_usd.selection import RigidContactView
from newton_usd.sim import Simulation

from stages import add_box, add_ground, environments, new_stage

G = 9.81


@pytest.mark.parametrize("backend", ["cpu", "warp"])
def test_contact_forces_of_resting_boxes_sum_to_their_weight(backend):
    sim = Simulation.open(environments(n=3), env_root="/World/envs", record=False, device="cpu", backend=backend)
    sim.run(40)  # 2/3 s: the boxes (1 kg, 0.5 m up) have landed (at 0.3 s) and rest
    view = RigidContactView(sim, "/World/envs/env_*/box", ["/World/ground"])
    assert view.count == 3
    weight = view.get_masses().numpy() * G
    net = view.get_net_contact_forces().numpy()
    assert net.shape == (3, 3)
    np.testing.assert_allclose(net[:, 2], weight, rtol=0.01)
    assert np.abs(net[:, :2]).max() < 0.01 * weight.min()
    matrix = view.get_contact_force_matrix().numpy()
    assert matrix.shape == (3, 1, 3)
    np.testing.assert_allclose(matrix[:, 0], net, atol=1e-6)  # every contact is with the ground
    contacts = view.contacts
    n = contacts.rigid_contact_count
    assert n >= 3 * 4  # a face on a plane: four corners per box
    pairs = contacts.shape_pairs(sim.model)
    worlds = contacts.rigid_contact_world.numpy()[:n]
    assert sorted(set(worlds)) == [0, 1, 2] and (np.diff(worlds) >= 0).all()
    for (ground, box), w in zip(pairs, worlds, strict=True):
        assert ground == "/World/ground" and box == f"/World/envs/env_{w}/box"
    np.testing.assert_allclose(contacts.rigid_contact_normal.numpy()[:n], [[0, 0, 1]] * n, atol=1e-5)
    assert np.abs(contacts.rigid_contact_depth.numpy()[:n]).max() < 5e-3


def test_force_between_two_stacked_bodies_and_the_ground(caplog):
    stage = new_stage()
    add_ground(stage)
    add_box(stage, "/Bottom", 0.4, (0, 0, 0.2), mass=3.0)
    add_box(stage, "/Top", 0.2, (0, 0, 0.5), mass=1.0)
    sim = Simulation.open(stage, record=False, device="cpu", backend="cpu")
    sim.run(60)
    view = RigidContactView(sim, "/Bottom", ["/Ground", "/Top"])
    matrix = view.get_contact_force_matrix().numpy()[0]
    assert matrix[0, 2] == pytest.approx(4.0 * G, rel=0.01)  # the ground holds both
    assert matrix[1, 2] == pytest.approx(-1.0 * G, rel=0.01)  # the top box presses down
    np.testing.assert_allclose(view.get_net_contact_forces().numpy()[0], matrix.sum(axis=0), atol=1e-5)
    top = RigidContactView(sim, "/Top")
    assert top.get_net_contact_forces().numpy()[0, 2] == pytest.approx(1.0 * G, rel=0.01)
    with pytest.raises(NewtonUsdError, match="needs filter_patterns"):
        top.get_contact_force_matrix()
    with pytest.raises(NewtonUsdError, match="matches no collider"):
        RigidContactView(sim, "/Top", ["/Nothing"])
    small = RigidContactView(sim, "/Top", capacity=2)
    small.update()
    assert small.contacts.rigid_contact_count == 2
    assert "a Contacts buffer of 2" in caplog.text
