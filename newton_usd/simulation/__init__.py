"""The jobs of a :class:`~newton_usd.sim.Simulation`, one module each; ``newton_usd/sim.py`` tells the story
(open a stage, make the model and solver, reset, close) and its class takes its methods from these:

- :mod:`~newton_usd.simulation.clock`: frames per second and physics steps per frame.
- :mod:`~newton_usd.simulation.stepping`: a frame's physics steps, the run frame after frame, kinematic bodies.
- :mod:`~newton_usd.simulation.bounds`: a simulation that blew up (NaN, too far, too fast) stops the run.
- :mod:`~newton_usd.simulation.runaway`: a body flung out of the scene (every number finite) stops it too.
- :mod:`~newton_usd.simulation.pipelined`: the run with the stage write behind the device's steps.
- :mod:`~newton_usd.simulation.recording`: the frames written onto the output layer, value clips, save.
- :mod:`~newton_usd.simulation.edits`: edits made on the stage while it runs, applied to the running model.
- :mod:`~newton_usd.simulation.worlds`: which bodies are written, and copies of the environment for other worlds.
"""
