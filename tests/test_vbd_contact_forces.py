"""VBD's contact forces, computed only once asked for (issue 49: our frame as fast as Newton's own loop, which computes
none): Newton's ``CONTACT_F`` observable runs inside each VBD step, so a ``RigidContactView`` asks for it when made,
and a bare ``update_contacts`` asks at its first call (its forces unknown, NaN, never a false zero; the next
step's are known). A run that reads no contacts launches no contact-force kernel."""

from __future__ import annotations

import numpy as np

from newton_usd import Simulation
from newton_usd.selection import RigidContactView

from stages import add_box, add_ground, new_stage


def cube_stage(tmp_path) -> str:
    stage = new_stage(tmp_path / "cube.usda")
    add_ground(stage)
    add_box(stage, "/Cube", 0.2, (0.0, 0.0, 0.1005), mass=1.0)
    stage.Save()
    return str(tmp_path / "cube.usda")


def test_a_contact_view_gets_vbds_forces_and_a_bare_run_computes_none(tmp_path):
    path = cube_stage(tmp_path)
    sim = Simulation.open(path, solver="vbd", device="cpu", record=False)
    assert sim.solver.contact_forces is None  # (nothing asked: no observable, no kernel in the steps)
    view = RigidContactView(sim, "/Cube", ["/Ground"])
    assert sim.solver.contact_forces is not None
    sim.run(20)
    net = view.get_net_contact_forces().numpy()
    assert abs(net[0, 2] / 9.81 - 1.0) < 0.05, net  # (the ground holds the 1 kg cube up)


def test_a_bare_update_contacts_says_unknown_then_known(tmp_path):
    sim = Simulation.open(cube_stage(tmp_path), solver="vbd", device="cpu", record=False)
    sim.run(20)
    contacts = sim.model.contacts(64)
    sim.solver.update_contacts(contacts)
    n = contacts.rigid_contact_count
    assert n >= 4 and np.isnan(contacts.rigid_contact_force.numpy()[:n]).all()  # (not computed in those steps)
    sim.run(1)
    sim.solver.update_contacts(contacts)
    n = contacts.rigid_contact_count
    force = contacts.rigid_contact_force.numpy()[:n].astype(np.float64)
    assert np.all(np.isfinite(force)) and abs(np.abs(force[:, 2]).sum() / 9.81 - 1.0) < 0.05, force
