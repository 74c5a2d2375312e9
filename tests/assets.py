"""Tiny local training assets for the end-to-end tests: nothing is downloaded.

`build_tiny_assets(root)` writes, in a few seconds on one core:
  - a byte-level BPE tokenizer trained here with the `tokenizers` library, with a ChatML chat template;
  - a LLaMA-architecture causal LM (hidden 64, 2 layers) with fixed-seed weights, saved with `save_pretrained`;
  - an alpaca-format JSONL dataset registered in `dataset_info.json` (LLaMA-Factory's dataset registry format:
    hiyouga/LLaMA-Factory data/README.md, "alpaca" columns instruction/input/output).

The result is cached: a second call with the same root returns at once (the marker file is written last, so a
half-built directory is rebuilt). Also runnable as `python tests/assets.py DIR`.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

DATASET_NAME = "tiny_alpaca"
_MARKER = ".assets-complete-v1"
# Special tokens: one token serves as bos/eos/pad so that LLaMA-Factory's templates find an eos to append.
_EOS = "<|endoftext|>"
_CHAT_TOKENS = ["<|im_start|>", "<|im_end|>"]
# ChatML, the shape most chat models use; LLaMA-Factory replaces it in memory when a `template:` is named.
_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@dataclass(frozen=True)
class TinyAssets:
    """Paths to use in a LLaMA-Factory yaml: model_name_or_path, dataset_dir, dataset."""

    root: Path
    model_dir: Path
    dataset_dir: Path
    dataset_name: str = DATASET_NAME


def alpaca_records(count: int = 64) -> list[dict[str, str]]:
    """Deterministic instruction/answer pairs: small arithmetic the tiny model can visibly learn."""
    records = []
    for i in range(count):
        a, b = (i * 7) % 23, (i * 11) % 19
        records.append(
            {
                "instruction": f"Add {a} and {b}.",
                "input": "" if i % 3 else f"The numbers are {a} and {b}.",
                "output": f"The sum of {a} and {b} is {a + b}.",
            }
        )
    return records


def _train_tokenizer(texts: list[str], vocab_size: int = 384):
    """A byte-level BPE tokenizer (GPT-2 style pre-tokenizer) wrapped as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[_EOS, *_CHAT_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token=_EOS,
        eos_token=_EOS,
        pad_token=_EOS,
        additional_special_tokens=_CHAT_TOKENS,
        model_max_length=256,
    )
    tokenizer.chat_template = _CHAT_TEMPLATE
    return tokenizer


def _build_model(vocab_size: int, eos_id: int):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
        pad_token_id=eos_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)  # same weights every build, so runs on different days compare
    return LlamaForCausalLM(config)


def build_tiny_assets(root: Path | str) -> TinyAssets:
    """Build (or reuse) the tokenizer, model and dataset under `root`."""
    root = Path(root)
    assets = TinyAssets(root=root, model_dir=root / "tiny-llama", dataset_dir=root / "data")
    if (root / _MARKER).exists():
        return assets
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    records = alpaca_records()
    assets.dataset_dir.mkdir(parents=True, exist_ok=True)
    with open(assets.dataset_dir / f"{DATASET_NAME}.jsonl", "w") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")
    registry = {DATASET_NAME: {"file_name": f"{DATASET_NAME}.jsonl"}}  # alpaca is the default formatting
    (assets.dataset_dir / "dataset_info.json").write_text(json.dumps(registry, indent=2))

    texts = [" ".join(r.values()) for r in records] + [
        "Below is an instruction. ### Instruction: ### Response:"
    ]
    tokenizer = _train_tokenizer(texts)
    model = _build_model(len(tokenizer), tokenizer.eos_token_id)
    model.save_pretrained(assets.model_dir)
    tokenizer.save_pretrained(assets.model_dir)
    (root / _MARKER).write_text("ok\n")
    return assets


if __name__ == "__main__":
    built = build_tiny_assets(sys.argv[1] if len(sys.argv) > 1 else "tiny-assets")
    print(built.model_dir, built.dataset_dir)
