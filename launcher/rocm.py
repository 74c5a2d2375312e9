"""AMD GPU tables in one place: gfx arch → product, profile → arch, which archs do bf16.

Sources: ROCm's GPU support tables (gfx90a = MI250, gfx942 = MI300X, gfx950 = MI350X, gfx1100 = RX 7900 XT/XTX);
bf16 on CDNA2 and later and on RDNA3 (docs/facts.md). No I/O.
"""

from __future__ import annotations

ARCH_PRODUCT = {
    "gfx908": "MI100",
    "gfx90a": "MI250",
    "gfx942": "MI300X",
    "gfx950": "MI350X",
    "gfx1100": "RX 7900",
}
# rocm-smi prints KFD's gfx_target_version digit by digit: 9.0.10 comes out as "gfx9010", not "gfx90a".
ROCM_SMI_ARCH = {"gfx9010": "gfx90a", "gfx9012": "gfx90c"}
# GPU architecture by inventory profile (templates/env_<profile>.env); cpu: no GPU.
PROFILE_ARCH = {"mi300x": "gfx942", "mi250": "gfx90a", "rx7900": "gfx1100", "cpu": None}
BF16_ARCHS = frozenset({"gfx90a", "gfx942", "gfx950", "gfx1100"})
