"""The Kit services the extension listens to: events, settings, the timeline and the current stage.

Each service is looked up when the extension starts, so the same code runs in a full Kit app (with
omni.usd and omni.timeline) and in the bare kernel of the ``omniverse-kit`` wheel (without them):

- events: Kit 110's ``carb.eventdispatcher`` (``observe_event``); the deprecated event streams only
  when the app has no dispatcher;
- the stage: ``omni.usd``'s context when present, else a :class:`StandaloneStages` that the app (or a
  test) opens stages into, announcing them with events of its own;
- the timeline: ``omni.timeline``'s Play/Pause/Stop events when present; without it Playback is
  driven through ``get_extension().playback``.

Only this module and :mod:`newton_usd.kit.extension` import Kit (this one on use, not on import).
"""

from __future__ import annotations

import logging

LOG = logging.getLogger("newton_usd.kit")

EXT_NAME = "newton_usd.kit"
SETTINGS_ROOT = f"/exts/{EXT_NAME}"
OBSERVER_PREFIX = f"{EXT_NAME}."
"""Every subscription the extension makes is named with this prefix (tests look for leftovers)."""

STAGE_OPENED = f"{EXT_NAME}:stage_opened"
STAGE_CLOSING = f"{EXT_NAME}:stage_closing"


def optional_module(module: str):
    """The module, or None when the app lacks it."""
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        return None


def read_settings() -> dict:
    """The extension's settings subtree (``[settings]`` of extension.toml plus ``--/exts/...`` overrides)."""
    import carb.settings  # noqa: PLC0415

    return carb.settings.get_settings().get(SETTINGS_ROOT) or {}


def guarded(what: str, fn, default=None):
    """``fn`` wrapped so that an exception is logged with ``what`` and never reaches Kit.

    On an exception the call returns ``default``: give slots that return a value one of the
    declared type (a native caller cannot convert None to an int or a bool).
    """

    def call(*args):
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001 (never take the app down)
            LOG.exception("newton_usd.kit: %s failed", what)
            return default

    return call


class Events:
    """Subscriptions by event name; :meth:`clear` ends them all (extension shutdown, disable)."""

    def __init__(self):
        import carb.eventdispatcher  # noqa: PLC0415

        self._dispatcher = carb.eventdispatcher.get_eventdispatcher()
        self._subs = []

    def observe(self, event_name: str, name: str, fn, order: int = 0) -> None:
        """Call ``fn(event)`` on each ``event_name`` event."""
        self._subs.append(
            self._dispatcher.observe_event(
                event_name=event_name, on_event=guarded(name, fn), observer_name=OBSERVER_PREFIX + name, order=order
            )
        )

    def keep(self, subscription) -> None:
        """Hold a subscription made through another API (a legacy event stream, omni.physics)."""
        self._subs.append(subscription)

    def dispatch(self, event_name: str, payload: dict | None = None) -> None:
        self._dispatcher.dispatch_event(event_name, payload or {})

    def clear(self) -> None:
        for sub in self._subs:
            reset = getattr(sub, "reset", None) or getattr(sub, "unsubscribe", None)
            if reset is not None:
                reset()
        self._subs.clear()


# ---------------------------------------------------------------------------------------- stages
class OmniUsdStages:
    """The stage of omni.usd's default context, and its opened/closing events."""

    def __init__(self, omni_usd):
        self._usd = omni_usd
        self._ctx = omni_usd.get_context()

    def current(self):
        return self._ctx.get_stage()

    def observe(self, events: Events, on_opened, on_closing) -> None:
        kinds = self._usd.StageEventType
        if hasattr(self._ctx, "stage_event_name"):  # Kit 106+
            events.observe(self._ctx.stage_event_name(kinds.OPENED), "stage_opened", lambda _e: on_opened())
            events.observe(self._ctx.stage_event_name(kinds.CLOSING), "stage_closing", lambda _e: on_closing())
            return
        wanted = {int(kinds.OPENED): on_opened, int(kinds.CLOSING): on_closing}  # older Kit: the event stream

        def on_event(e):
            fn = wanted.get(int(e.type))
            if fn is not None:
                fn()

        stream = self._ctx.get_stage_event_stream()
        events.keep(stream.create_subscription_to_pop(guarded("stage event", on_event), name=OBSERVER_PREFIX + "stage"))


class StandaloneStages:
    """Stages for an app without omni.usd (the bare Kit kernel): :meth:`open` and :meth:`close`.

    Opening and closing dispatch ``newton_usd.kit:stage_opened`` / ``:stage_closing`` through the
    app's event dispatcher, as omni.usd's context does with its own events. The stage opened at
    startup is the ``stage`` setting (``--/exts/newton_usd.kit/stage=PATH``), if any.
    """

    def __init__(self, events: Events):
        self._events = events
        self._stage = None

    def current(self):
        return self._stage

    def open(self, source):
        """Open ``source`` (a path or a ``Usd.Stage``) as the current stage; returns the stage."""
        from ..usd import open_stage  # noqa: PLC0415

        stage, _ = open_stage(source)
        self.close()
        self._stage = stage
        self._events.dispatch(STAGE_OPENED)
        return stage

    def close(self) -> None:
        if self._stage is not None:
            self._events.dispatch(STAGE_CLOSING)
            self._stage = None

    def observe(self, events: Events, on_opened, on_closing) -> None:
        events.observe(STAGE_OPENED, "stage_opened", lambda _e: on_opened())
        events.observe(STAGE_CLOSING, "stage_closing", lambda _e: on_closing())


def stage_provider(events: Events):
    """omni.usd's context when the app has omni.usd, else a :class:`StandaloneStages`."""
    omni_usd = optional_module("omni.usd")
    return OmniUsdStages(omni_usd) if omni_usd is not None else StandaloneStages(events)


def stage_from_id(stage_id: int):
    """The stage a USD stage cache id names (what omni.physics passes to ``on_attach``), or None."""
    from pxr import Usd, UsdUtils  # noqa: PLC0415

    return UsdUtils.StageCache.Get().Find(Usd.StageCache.Id.FromLongInt(int(stage_id))) or None


def stage_id(stage) -> int:
    """The USD stage cache id of ``stage`` (0 when there is none, or it is not in the cache)."""
    from pxr import UsdUtils  # noqa: PLC0415

    if stage is None:
        return 0
    sid = UsdUtils.StageCache.Get().GetId(stage)
    return sid.ToLongInt() if sid.IsValid() else 0


# ---------------------------------------------------------------------------------------- timeline
def observe_timeline(events: Events, on_play, on_pause, on_stop):
    """Subscribe to omni.timeline's Play/Pause/Stop; returns the timeline interface, or None without one."""
    timeline = optional_module("omni.timeline")
    if timeline is None:
        return None
    handlers = (("PLAY", on_play), ("PAUSE", on_pause), ("STOP", on_stop))
    if hasattr(timeline, "GLOBAL_EVENT_PLAY"):  # Kit 110 events
        for kind, fn in handlers:
            events.observe(getattr(timeline, f"GLOBAL_EVENT_{kind}"), f"timeline_{kind.lower()}", lambda _e, f=fn: f())
    else:  # the deprecated event stream
        stream = timeline.get_timeline_interface().get_timeline_event_stream()
        for kind, fn in handlers:
            events.keep(
                stream.create_subscription_to_pop_by_type(
                    int(getattr(timeline.TimelineEventType, kind)),
                    guarded(f"timeline {kind.lower()}", lambda _e, f=fn: f()),
                    name=OBSERVER_PREFIX + f"timeline_{kind.lower()}",
                )
            )
    return timeline.get_timeline_interface()


def observe_update(events: Events, on_update) -> None:
    """Call ``on_update(dt)`` on every app update (dt: the update's elapsed seconds)."""
    import omni.kit.app  # noqa: PLC0415

    if hasattr(omni.kit.app, "GLOBAL_EVENT_UPDATE"):
        events.observe(omni.kit.app.GLOBAL_EVENT_UPDATE, "update", lambda e: on_update(float(e["dt"])))
        return
    stream = omni.kit.app.get_app().get_update_event_stream()  # pre-110 Kit
    events.keep(
        stream.create_subscription_to_pop(
            guarded("update", lambda e: on_update(float(e.payload["dt"]))), name=OBSERVER_PREFIX + "update"
        )
    )


def observe_shutdown(events: Events, on_shutdown) -> None:
    """Call ``on_shutdown()`` when the app quits (Kit's fast shutdown skips the extensions' on_shutdown)."""
    import omni.kit.app  # noqa: PLC0415

    if hasattr(omni.kit.app, "GLOBAL_EVENT_PRE_SHUTDOWN"):
        events.observe(omni.kit.app.GLOBAL_EVENT_POST_QUIT, "post_quit", lambda _e: on_shutdown())
        events.observe(omni.kit.app.GLOBAL_EVENT_PRE_SHUTDOWN, "pre_shutdown", lambda _e: on_shutdown())
        return
    stream = omni.kit.app.get_app().get_shutdown_event_stream()  # pre-110 Kit
    events.keep(stream.create_subscription_to_pop(guarded("shutdown", lambda _e: on_shutdown())))


def observe_extension(events: Events, ext_name: str, on_enabled, on_disabled) -> None:
    """Call ``on_enabled()`` now if extension ``ext_name`` is enabled and whenever it is; ``on_disabled()``
    whenever it is disabled."""
    import omni.kit.app  # noqa: PLC0415

    manager = omni.kit.app.get_app().get_extension_manager()
    events.keep(
        manager.subscribe_to_extension_enable(
            guarded(f"{ext_name} enabled", lambda _ext_id: on_enabled()),
            guarded(f"{ext_name} disabled", lambda _ext_id: on_disabled()),
            ext_name=ext_name,
            hook_name=OBSERVER_PREFIX + ext_name,
        )
    )
