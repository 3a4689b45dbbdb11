"""A stand-in for omni.timeline, which the bare Kit kernel lacks (the issue allows faking it).

It has the Kit 110 surface the extension uses: ``GLOBAL_EVENT_PLAY/PAUSE/STOP`` event names, and
``get_timeline_interface()`` with ``play``, ``pause``, ``stop`` and ``is_playing``. Like the real
timeline, a state change is announced through the app's carb.eventdispatcher.
"""

import sys
import types

GLOBAL_EVENT_PLAY = "omni.timeline:play"
GLOBAL_EVENT_PAUSE = "omni.timeline:pause"
GLOBAL_EVENT_STOP = "omni.timeline:stop"


class _Timeline:
    def __init__(self):
        self._playing = False

    def _announce(self, event_name):
        import carb.eventdispatcher

        carb.eventdispatcher.get_eventdispatcher().dispatch_event(event_name, {})

    def play(self):
        self._playing = True
        self._announce(GLOBAL_EVENT_PLAY)

    def pause(self):
        self._playing = False
        self._announce(GLOBAL_EVENT_PAUSE)

    def stop(self):
        self._playing = False
        self._announce(GLOBAL_EVENT_STOP)

    def is_playing(self):
        return self._playing


_TIMELINE = _Timeline()


def install() -> types.ModuleType:
    """Make ``import omni.timeline`` give this fake; returns the module."""
    module = types.ModuleType("omni.timeline")
    module.GLOBAL_EVENT_PLAY = GLOBAL_EVENT_PLAY
    module.GLOBAL_EVENT_PAUSE = GLOBAL_EVENT_PAUSE
    module.GLOBAL_EVENT_STOP = GLOBAL_EVENT_STOP
    module.get_timeline_interface = lambda: _TIMELINE
    sys.modules["omni.timeline"] = module
    return module
