"""Seeing a recording: any USD stage (a ``usdsim`` output, with time samples or value clips) read into meshes,
colours and per-frame poses (:mod:`~newton_usd.view.scene`, :mod:`~newton_usd.view.poses`), drawn as one
self-contained web page (:mod:`~newton_usd.view.page`), served live (:mod:`~newton_usd.view.serve`) or rendered to an
MP4 offscreen (:mod:`~newton_usd.view.video`). It reads USD only, so it shows every engine's output alike; the
``usdsim view`` / ``usdsim video`` commands are :mod:`newton_usd.cli.view`; :mod:`~newton_usd.view.browser` sets up
the browser the tests drive."""
