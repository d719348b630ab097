"""Running code on kernels: the shared kernel core and the two engines built on it.

- ``kernel``: what both engines share: one connection to a kernel, its messages, one cell run,
  stdin prompts, cancellation, progress callbacks and the result's shape;
- ``python``: the python tool's engine: sessions of kernels the tool owns, in a pool;
- ``inplace``: the in-place engine: a notebook's cells run in the notebook's own kernel, their
  outputs written back into the notebook.

Neither engine imports the other; both import ``kernel``, which imports neither.
"""
