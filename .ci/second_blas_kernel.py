"""Print an OpenBLAS kernel (OPENBLAS_CORETYPE) that differs from the one numpy uses here.

CI runs the default tests a second time under it, so that a tolerance that only holds for one
machine's BLAS rounding fails here instead of on a user's machine (#23). The choice is a kernel
that every CPU of the architecture can run: Sandybridge (AVX, present on every x86-64 CPU since
2011) unless that is already the kernel in use, then Prescott (SSE3, every x86-64 CPU); ARMV8 on
64-bit ARM. Prints nothing when no different kernel can be chosen.
"""

import platform

import numpy  # noqa: F401  (loads OpenBLAS, so threadpoolctl can see it)
from threadpoolctl import threadpool_info

current = {i.get("architecture", "") for i in threadpool_info() if i.get("internal_api") == "openblas"}
current = {c.lower() for c in current}
machine = platform.machine().lower()
if machine in ("x86_64", "amd64"):
    choices = ["Sandybridge", "Prescott"]
elif machine in ("aarch64", "arm64"):
    choices = ["ARMV8"]
else:
    choices = []
print(next((c for c in choices if c.lower() not in current), ""))
