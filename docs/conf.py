"""Sphinx configuration for the skprivpred documentation.

Build (from the repository root; warnings are errors)::

    PYTHONPATH=. .venv/bin/python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

import importlib
import os
import re
import shutil
import sys
import warnings

from sphinx.util import logging
from threadpoolctl import threadpool_limits

DOCS_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(DOCS_DIR))

import skprivpred  # noqa: E402

project = "skprivpred"
author = "The skprivpred developers"
copyright = "The skprivpred developers"
release = skprivpred.__version__
version = re.match(r"\d+\.\d+", release).group(0)

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    # sphinx.ext.intersphinx is deliberately absent: the docs build offline.
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "README.md", "Thumbs.db", ".DS_Store"]
root_doc = "index"

# Unresolved cross-references to objects outside these docs (numpy, sklearn,
# private helpers) are rendered as plain text, not reported.
nitpicky = False

# -- autodoc / autosummary ------------------------------------------------------
# Stubs are written to docs/generated/ (git-ignored) on every build.
autosummary_generate = True
autosummary_generate_overwrite = True
autosummary_imported_members = False
autodoc_default_options = {"member-order": "alphabetical"}
autodoc_typehints = "none"  # types are in the numpydoc sections

# -- numpydoc ---------------------------------------------------------------------
# Methods and properties are documented by the class template
# (_templates/autosummary/class.rst), so numpydoc must not list them again.
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- sphinx-gallery ---------------------------------------------------------------
# The scripts in examples/ run during the build (their figures and output are
# part of the pages); a failing example fails the build. The generated pages
# go to docs/auto_examples/ (git-ignored); a script whose text has not changed
# since the last local build is not run again (delete docs/auto_examples/ to
# force it; a fresh clone, as in CI, runs them all). Examples load Adult from
# the local cache of skprivpred.datasets, fetching it once if needed; without
# the cache and the network the Adult example says so and uses a synthetic
# stand-in instead of failing.
os.environ.setdefault("MPLBACKEND", "Agg")
# The examples fit hundreds of tiny models: a multi-threaded BLAS only adds
# synchronisation overhead to them, and oversubscribes a shared machine (it
# made the build several times slower). One thread for the whole build.
threadpool_limits(1)
# A warning an example emits is captured into its page. Python's default format starts
# with the file's absolute path (the builder's machine, a virtual environment's
# site-packages): show the category and the message only.


def _format_warning(message, category, filename, lineno, line=None):
    return f"{category.__name__}: {message}\n"


warnings.formatwarning = _format_warning
sphinx_gallery_conf = {
    "examples_dirs": os.path.join(os.path.dirname(DOCS_DIR), "examples"),
    "gallery_dirs": os.path.join(DOCS_DIR, "auto_examples"),
    "filename_pattern": r"/plot_",  # run every plot_*.py
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "download_all_examples": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "backreferences_dir": None,
    "write_computation_times": False,  # no sg_execution_times page
    "min_reported_time": float("inf"),  # no run times in the pages (noisy)
}

# -- HTML -------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"skprivpred {release}"
# custom.css wraps long lines of code and of the examples' output instead of
# letting them run off the page.
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "description": "scikit-learn estimators whose predictions are differentially private",
    "fixed_sidebar": True,
}

# -- API coverage check -----------------------------------------------------------
# Every name in the ``__all__`` of these modules must have an autosummary entry
# in api.rst; a missing name (or a module that cannot be imported) is a build
# warning, hence a failure under -W. Adding a public name = one line in api.rst.
API_MODULES = {
    "skprivpred": "skprivpred",
    "skprivpred.mechanisms": "skprivpred.mechanisms",
    "skprivpred.audit": "skprivpred.audit",
    "skprivpred.datasets": "skprivpred.datasets",
    "skprivpred.serving": "skprivpred.serving",
    "skprivpred.preprocessing": "skprivpred.preprocessing",
    "skprivpred.model_selection": "skprivpred.model_selection",
    "skprivpred.utils": "skprivpred.utils",
}
API_IGNORED = {"__version__"}

_logger = logging.getLogger(__name__)


def _documented_names(api_text):
    """Fully qualified names listed in the autosummary blocks of api.rst."""
    names, current = set(), None
    for line in api_text.splitlines():
        stripped = line.strip()
        match = re.match(r"\.\.\s+(?:currentmodule|module|automodule)::\s+(\S+)", stripped)
        if match:
            current = match.group(1)
            continue
        if line.startswith("   ") and stripped and not stripped.startswith((":", "..")):
            name = stripped.lstrip("~")
            names.add(name if "." in name or current is None else f"{current}.{name}")
    return names


def _documented_at_top_level(module, name, documented):
    """A name re-exported from ``skprivpred`` is documented once, as ``skprivpred.name``."""
    if module.__name__ == "skprivpred" or f"skprivpred.{name}" not in documented:
        return False
    return getattr(skprivpred, name, None) is getattr(module, name)


def check_api_coverage(app):
    api_path = os.path.join(app.srcdir, "api.rst")
    with open(api_path, encoding="utf-8") as f:
        documented = _documented_names(f.read())
    for module_name in API_MODULES.values():
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # report, do not crash the build
            _logger.warning(
                "api.rst: cannot import %s (%s: %s)", module_name, type(exc).__name__, exc
            )
            continue
        for name in getattr(module, "__all__", []):
            if name in API_IGNORED or _documented_at_top_level(module, name, documented):
                continue
            if f"{module_name}.{name}" not in documented:
                _logger.warning(
                    "api.rst: public name %s.%s has no autosummary entry", module_name, name
                )


# -- inherited scikit-learn docstrings ---------------------------------------------
# Class pages include inherited public methods (score, get_params, ...). Their
# scikit-learn docstrings use :ref: labels and :term: glossary entries that only
# exist in scikit-learn's own documentation; render those as plain text.
_FOREIGN_ROLE = re.compile(r":(?:ref|term):`(?:([^`<]*?)\s*<[^`>]*>|([^`]*))`")


def _owner_module(obj):
    obj = getattr(obj, "fget", obj)  # properties
    return getattr(obj, "__module__", None) or ""


def plain_foreign_roles(app, what, name, obj, options, lines):
    if _owner_module(obj).split(".")[0] == "skprivpred":
        return
    lines[:] = [_FOREIGN_ROLE.sub(lambda m: m.group(1) or m.group(2), line) for line in lines]


def clean_generated(app):
    """Delete stale stubs (e.g. of a removed name) before autosummary rewrites them."""
    shutil.rmtree(os.path.join(app.srcdir, "generated"), ignore_errors=True)


def setup(app):
    app.connect("builder-inited", clean_generated, priority=100)  # before autosummary (500)
    app.connect("builder-inited", check_api_coverage)
    app.connect("autodoc-process-docstring", plain_foreign_roles, priority=400)
