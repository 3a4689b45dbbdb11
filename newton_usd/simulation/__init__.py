"""The parts of a :class:`~newton_usd.sim.Simulation`, one module each; each part is an object that owns its state and
is handed the parts it needs. ``newton_usd/sim.py`` tells the story (open, a frame through the parts, run, reset,
close):

- :mod:`~newton_usd.simulation.options`: :class:`RunOptions`, the run's options, checked once and frozen.
- :mod:`~newton_usd.simulation.opening`: opening a run (the scenes, the import, the solver, the clock).
- :mod:`~newton_usd.simulation.physics`: what is simulated now (import, model, solver, states, control).
- :mod:`~newton_usd.simulation.clock`: the clock; frames per second and physics steps per frame.
- :mod:`~newton_usd.simulation.stepping`: the stepper: a frame's physics steps, kinematic bodies, kernel loading.
- :mod:`~newton_usd.simulation.bounds`: the blow-up check (NaN, too far, too fast) that stops the run.
- :mod:`~newton_usd.simulation.runaway`: a body flung out of the scene (every number finite) stops it too.
- :mod:`~newton_usd.simulation.pipelined`: the run with the stage write behind the device's steps.
- :mod:`~newton_usd.simulation.recording`: the recorder: frames onto the output layer, value clips, save.
- :mod:`~newton_usd.simulation.edits`: the live editor: edits made on the stage while it runs, applied.
- :mod:`~newton_usd.simulation.worlds`: which bodies are written, and copies of the environment for other worlds.
"""

from .options import RunOptions

__all__ = ["RunOptions"]
