"""syncfix's rewrites: one module per rule, each a LibCST codemod.

Installed as ``syncfix.codemods`` (see pyproject.toml). Every module defines a
:class:`syncfix.rules.Rule` subclass (finder, fixer, doc and examples);
:mod:`syncfix.codemod_commands` makes each a LibCST codemod command, so power users can run one
rewrite with LibCST's own tool::

    python -m libcst.tool codemod -x syncfix.codemod_commands.BlockingHostToDevice src/

Code ranges: 1xx transfers and tensor creation, 2xx scalar control flow and data-dependent
shapes, 3xx merged reads and device accumulation, 4xx logging, 9xx syncfix's own (suppressions).
"""
