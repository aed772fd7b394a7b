"""Sphinx configuration for skmrf: API reference from the docstrings, user guide, example gallery.

Build with ``make -C doc html`` (warnings are errors). Nothing here needs the network.
"""

import os
from pathlib import Path

import skmrf

DOC = Path(__file__).resolve().parent
ROOT = DOC.parent

project = "skmrf"
author = "the skmrf developers"
copyright = "the skmrf developers"
release = skmrf.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "generated/*.examples"]
default_role = "literal"
nitpicky = False

# autosummary writes one page per documented object into generated/ (not checked in).
autosummary_generate = True
autodoc_default_options = {"show-inheritance": True}
autodoc_typehints = "none"

# numpydoc renders the sections; the class template lists the methods itself.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# Examples run as plain scripts save their figures into $SKMRF_FIGURES (default ./figures);
# under Sphinx they go to the build folder, and sphinx-gallery captures them as well.
os.environ.setdefault("SKMRF_FIGURES", str(DOC / "_build" / "example_figures"))
os.environ.setdefault("MPLBACKEND", "Agg")

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "backreferences_dir": "generated",
    "doc_module": ("skmrf",),
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 1,
}

html_theme = "alabaster"
html_theme_options = {"description": "Markov random fields as scikit-learn estimators", "page_width": "1100px"}
html_static_path = []
