"""What a package's API page lists: its ``__all__``, each name with the page that documents it.

Used by ``_templates/autosummary/module.rst`` through ``autosummary_context``. A name defined in a public
module is documented there (the package's page links to it); one defined in a private module (a leading
underscore, which the reference does not document) or not a class or function is documented on the
package's own page.
"""

import importlib
import inspect
import sys

from sphinx.pycode import ModuleAnalyzer


def _public(dotted: str) -> bool:
    return not any(part.startswith("_") for part in dotted.split("."))


def _data_home(package: str, name: str, obj) -> str | None:
    """The module below ``package`` that defines the value ``obj`` as ``name`` with a docstring, if any."""
    for modname, mod in sorted(sys.modules.items()):
        if modname.startswith(package + ".") and getattr(mod, name, None) is obj:
            if ("", name) in ModuleAnalyzer.for_module(modname).find_attr_docs():
                return modname
    return None


def exports(package: str) -> list[dict]:
    """``[{"name", "target", "short", "kind", "inline"}]`` for each name in ``package.__all__``, in order.

    ``kind`` is the autodoc directive (``class``, ``exception``, ``function``, ``data``); ``target`` the
    dotted name of the definition (``short``: relative to ``package``); ``inline`` whether the package's
    page documents it in full.
    """
    module = importlib.import_module(package)
    rows = []
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name)
        if inspect.ismodule(obj):
            continue  # submodules are listed under Modules
        if inspect.isclass(obj):
            kind = "exception" if issubclass(obj, BaseException) else "class"
        elif inspect.isfunction(obj) or inspect.isbuiltin(obj):
            kind = "function"
        else:
            kind = "data"
        home = getattr(obj, "__module__", None) if kind != "data" else _data_home(package, name, obj)
        inline = home is None or not _public(home) or home == package
        qualname = name if kind == "data" else obj.__qualname__
        target = f"{package}.{name}" if inline else f"{home}.{qualname}"
        # (autosummary wants the names below the package relative to it)
        rows.append(
            {"name": name, "target": target, "short": target[len(package) + 1 :], "kind": kind, "inline": inline}
        )
    return rows
