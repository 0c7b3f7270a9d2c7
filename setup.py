"""The one compiled part of the project; everything else is declared in pyproject.toml.

`agorad.runtime._appends` writes a big fan-out's notify lines with the GIL released
(agorad/runtime/helper.py says why and when). It is optional: where it cannot be
built (no C compiler or Python headers) the install goes on and the plain Python
version serves. Declared here, not in pyproject.toml, whose `ext-modules` table
setuptools still calls experimental.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("agorad.runtime._appends", ["agorad/runtime/_appends.c"], optional=True)])
