"""Sphinx configuration of the newton_usd docs site (MyST markdown pages, an API reference from the docstrings).

Build it as the tests do (warnings are errors)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)  # the checkout's newton_usd, also without `pip install -e .`

project = "newton_usd"
author = "the newton_usd authors"
copyright = "the newton_usd authors, Apache-2.0"  # noqa: A001 (Sphinx's name)
release = "0.1.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "sphinx.ext.viewcode",
    "docs_undocumented",  # docs/_ext: an undocumented public name is a warning (an error with -W)
]
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "_ext"))
import api_exports  # noqa: E402 (docs/_ext, on the path just above)

root_doc = "index"
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
# README.md: the sources' own front page on a code host (the site's is index.md)
exclude_patterns = ["_build", "_templates", "README.md", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]
suppress_warnings = ["config.cache"]  # autosummary_context holds a function: the build is not cached

# MyST: ```{directive} fences, :::{note} blocks, heading anchors for links like page.md#a-heading.
myst_enable_extensions = ["colon_fence", "deflist", "fieldlist"]
myst_heading_anchors = 4

# The API reference: one page per module, generated from the docstrings (Google style, napoleon).
autosummary_generate = True
autosummary_ignore_module_all = False  # a package's __all__ is its public API
autodoc_default_options = {"members": True, "show-inheritance": True}
# Each object is documented once, on the page of the module that defines it; a package's page lists what
# it exports (its __all__) with links there, and documents in full only what a private module defines.
autosummary_context = {"api_exports": api_exports.exports}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
# The Kit extension's adapters import Kit's own modules, which exist only inside a Kit app.
autodoc_mock_imports = ["omni", "carb"]
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

intersphinx_mapping = {}  # no network in the tests: references to other projects stay plain text

html_theme = "furo"
html_title = "newton_usd"
html_static_path = ["_static"]
