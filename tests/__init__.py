"""The test suite. Imported before any conftest or test module, so before numpy or torch."""

import os

# The suite runs more workers than cores: torch's OpenMP threads and numpy's OpenBLAS ones,
# two per process by default, busy-wait for work and starve the other workers (the
# embedding tests ran 8x slower so). What the tests start inherits it.
os.environ.setdefault("OMP_NUM_THREADS", "1")
