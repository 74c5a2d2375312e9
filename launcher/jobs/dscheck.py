"""Checks of a DeepSpeed json against the run it is used in: what would certainly fail is bad input, what
only might hurt is a warning with the fix. The json itself is never rewritten here.

DeepSpeed's own batch rule (deepspeed/runtime/config.py `_batch_assertion`): train_batch_size must equal
train_micro_batch_size_per_gpu × gradient_accumulation_steps × world size; given two of them it derives the third,
which must divide exactly. Under the HF Trainer (LLaMA-Factory) numeric values must also match the yaml's
per_device_train_batch_size / gradient_accumulation_steps, or HfTrainerDeepSpeedConfig raises "Please correct the
following DeepSpeed config values that mismatch TrainingArguments values" (transformers/integrations/deepspeed.py).
"""

from __future__ import annotations

from typing import Any


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def batch_error(config: dict[str, Any], world_size: int, micro: int | None, accum: int | None) -> str | None:
    """Why the batch sizes cannot work on `world_size` ranks, or None.

    `micro` / `accum`: the trainer's values (LLaMA-Factory yaml) when the json leaves them "auto" or unset.
    """
    tbs = _int(config.get("train_batch_size"))
    mb = _int(config.get("train_micro_batch_size_per_gpu"))
    ga = _int(config.get("gradient_accumulation_steps"))
    mb = mb if mb is not None else micro
    ga = ga if ga is not None else accum
    if tbs is None:
        return None
    if mb is not None and ga is not None:
        if tbs != mb * ga * world_size:
            return (
                f"train_batch_size {tbs} ≠ micro batch {mb} × gradient accumulation {ga} × world size {world_size} "
                f'= {mb * ga * world_size}: DeepSpeed refuses it at start (write "auto" or {mb * ga * world_size})'
            )
        return None
    known = mb if mb is not None else ga
    if known is not None and tbs % (known * world_size):
        return (
            f"train_batch_size {tbs} is not divisible by {known} × world size {world_size}: DeepSpeed cannot derive "
            'the missing batch setting (write "auto" or a multiple)'
        )
    return None


def precision_warning(config: dict[str, Any], supported: str, arch: str | None, where: str) -> str | None:
    """bf16/fp16 switched on in the json on hardware that lacks it (rlaunch knows the arch from the profile)."""
    for section in ("bf16", "fp16"):
        block = config.get(section)
        on = isinstance(block, dict) and block.get("enabled") is True
        # fp16 runs on every GPU arch rlaunch knows; bf16 only on BF16_ARCHS; neither on CPU.
        if on and section != supported and (supported == "fp32" or section == "bf16"):
            return (
                f"{where}: {section}.enabled is true but {arch or 'CPU'} has no {section}: "
                'set "enabled": "auto" (the trainer decides) or false'
            )
    return None
