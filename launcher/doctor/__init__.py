"""`rlaunch doctor`: raw node facts → parsed facts → checks, with the odd node out named.

Most multi-node failures are one node that differs (another ROCm or RCCL, a CUDA torch wheel, a missing group
or kernel option). The node side (launcher/node/facts.py) returns tool outputs verbatim; everything here is pure
parsing and comparison, tested against captured outputs (tests/fixtures/smi/SOURCES.md), except `gather`, which
asks the nodes through the transport. The steps, one module each: parse → facts → gather → checks → report.
"""

from launcher.doctor.checks import (
    FAST_CHECKS,
    Check,
    checks,
    fast_preflight_checks,
    odd_ones_out,
    shared_dir_check,
)
from launcher.doctor.facts import Facts, parse_facts
from launcher.doctor.gather import decode_reply, gather, gather_markers
from launcher.doctor.parse import (
    Fact,
    Gpu,
    normalize_arch,
    parse_amd_smi_static,
    parse_amd_smi_version,
    parse_rocm_smi,
    parse_rocm_version_file,
    parse_rocminfo,
    unknown,
)
from launcher.doctor.report import DoctorReport, doctor_args, format_report, run_doctor

__all__ = [
    "FAST_CHECKS",
    "Check",
    "DoctorReport",
    "Fact",
    "Facts",
    "Gpu",
    "checks",
    "decode_reply",
    "doctor_args",
    "fast_preflight_checks",
    "format_report",
    "gather",
    "gather_markers",
    "normalize_arch",
    "odd_ones_out",
    "parse_amd_smi_static",
    "parse_amd_smi_version",
    "parse_facts",
    "parse_rocm_smi",
    "parse_rocm_version_file",
    "parse_rocminfo",
    "run_doctor",
    "shared_dir_check",
    "unknown",
]
