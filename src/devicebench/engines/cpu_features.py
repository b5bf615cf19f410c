"""What the CPU offers the reduced number formats: AMX, AVX-512 (BF16, VNNI), AVX-VNNI.

Read from the CPU flags the environment section already records, so the record of a bf16 or
int8 cell says whether its format ran on hardware made for it or was emulated (slow but legal).
"""

from __future__ import annotations

from typing import Any

from devicebench.measure.environment import cpu_flags

FEATURES = ("amx_bf16", "amx_int8", "amx_tile", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni")


def cpu_features(flags: list[str] | None = None) -> dict[str, Any]:
    """Each feature's presence, and whether bf16 and int8 have native instructions here."""
    present = set(cpu_flags() if flags is None else flags)
    found: dict[str, Any] = {name: name in present for name in FEATURES}
    found["native_bf16"] = found["amx_bf16"] or found["avx512_bf16"]
    found["native_int8"] = found["amx_int8"] or found["avx512_vnni"] or found["avx_vnni"]
    return found


def format_note(precision: str, features: dict[str, Any]) -> str | None:
    """A word for the record where a reduced format has no native instructions on this CPU."""
    if precision == "bf16" and not features["native_bf16"]:
        return "bf16 without AVX-512 BF16 or AMX: legal but emulated, expect it slow"
    if precision == "int8" and not features["native_int8"]:
        return "int8 without VNNI or AMX: legal, but without the instructions that make it fast"
    return None
