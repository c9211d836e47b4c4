"""``syncfix.codemods``: the rules, one module each, kept in the repository's top-level
``codemods/`` folder.

An installed syncfix (wheel or editable) maps that folder here (``package-dir`` in
pyproject.toml) and never reads this file. In a source checkout run without installing
(``PYTHONPATH=.``) this file stands in: it points the package's search path at the folder, so
``syncfix.codemods.<rule>`` is the same file either way and a user's own ``codemods`` package
cannot shadow the rules.
"""

from pathlib import Path

__path__ = [str(Path(__file__).resolve().parent.parent.parent / "codemods")]
