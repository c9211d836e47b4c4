"""syncfix's rewrites: one module per rule, each a LibCST codemod.

Every module defines a :class:`syncfix.rules.Rule` subclass (finder, fixer, doc and examples) and
``Codemod``, a ``VisitorBasedCodemodCommand`` that applies the rule's safe fixes, so power users can
run one rewrite with LibCST's own tool::

    python -m libcst.tool codemod -x codemods.blocking_host_to_device.Codemod src/

Code ranges: 1xx transfers and tensor creation, 2xx scalar control flow and data-dependent
shapes, 3xx merged reads and device accumulation, 4xx logging, 9xx syncfix's own (suppressions).
"""
