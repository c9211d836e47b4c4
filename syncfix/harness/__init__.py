"""The verification harness: prove a rewrite on the user's program (``syncfix verify``), list a
program's sync sites (``syncfix trace``), and the pieces the pytest plugin shares.

* :mod:`.counter`     counts syncs by kind and user line (GPU-trace hooks; debug-mode
                      cross-check). Its docstring says why that counter, and what it cannot see.
* :mod:`.rewrite`     rewrites the program in memory as it is imported; maps lines back.
* :mod:`.equivalence` snapshots values and compares them (bitwise, or within a tolerance).
* :mod:`.runner`      runs the original and the rewritten program in two processes, in lockstep.
* :mod:`.child`       the child process's side of that.
* :mod:`.report`      turns runs into a verdict: rich tables or JSON.
* :mod:`.commands`    the click commands ``verify`` and ``trace``.

Nothing here imports torch at import time; it is an optional extra (``syncfix[verify]``).
"""
