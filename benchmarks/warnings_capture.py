"""Shared by the benchmark workers (stdlib only: they also run under other projects' venvs)."""

import logging
import warnings


def capture_warnings(logger_names):
    """Collect warnings (``warnings`` and the given loggers) into a list of strings."""
    caught = []

    class Handler(logging.Handler):
        def emit(self, record):
            caught.append(f"{record.name}: {record.getMessage()}")

    for name in logger_names:
        logging.getLogger(name).addHandler(Handler(logging.WARNING))
    warnings.simplefilter("always")
    warnings.showwarning = lambda msg, cat, *a, **k: caught.append(f"{cat.__name__}: {msg}")
    return caught
