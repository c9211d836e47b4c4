"""GPU workloads for benchmarks/gpu_effect.py: each ``NAME.py`` is written the way people write it;
``NAME_ideal.py`` is a hand-written sync-free reference. syncfix's versions are produced from
``NAME.py`` at benchmark time, never edited by hand.

Interface: ``setup(scale) -> state`` builds inputs (``scale`` is "small": launch-bound, or "large":
GPU-bound); ``run(state, steps) -> list`` runs ``steps`` iterations and returns what the program
would log or return, so variants can be compared value for value.
"""
