"""A Sphinx extension: every public name the API reference documents must have a docstring.

autodoc documents an object without one silently; this makes it a warning (an error under ``-W``), naming
the object, so a new public function or class cannot land undocumented. Private names (a leading
underscore) are not documented at all, so they are not checked.
"""

from sphinx.util import logging

logger = logging.getLogger(__name__)

# What autodoc documents that needs no docstring of its own: a module's data and a class's attributes are
# documented by the ``#:`` comment or docstring after them when they have one, and enum members by their
# class; exceptions and properties are checked like any function or class.
_CHECKED = {"module", "class", "exception", "function", "method", "property"}


def _check(app, what, name, obj, options, lines):
    if what not in _CHECKED or any(part.startswith("_") for part in name.split(".")):
        return
    # autodoc reads the docstring of every member it finds, also of names a module imports (which it then
    # leaves out): only what newton_usd defines is ours to document.
    home = obj.__name__ if what == "module" else getattr(obj, "__module__", None)
    if not (home or "").startswith("newton_usd"):
        return
    if not any(line.strip() for line in lines):
        logger.warning("undocumented public %s: %s (give it a docstring)", what, name, type="autodoc")


def setup(app):
    app.connect("autodoc-process-docstring", _check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
