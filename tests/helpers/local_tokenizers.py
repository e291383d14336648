"""Tokenizer folders shaped as the big public ones, built here with the `tokenizers` library (no hub).

- `byte_level_folder`: Llama 3's shape: byte-level BPE (as GPT-2, Llama 3, Qwen), its learned tokens
  at the top of 128,000 regular ids, 256 special tokens above them (`<|begin_of_text|>` 128,000 ...),
  and a post-processor that puts `<|begin_of_text|>` before every encoded text, as Llama 3's does.
- `sentencepiece_folder`: Llama 2's / Gemma's shape: BPE over `▁`-marked words with byte fallback
  (`<0x00>` ... `<0xFF>`), a normalizer that prepends `▁` and turns spaces into `▁`, a decoder that
  undoes both, and a post-processor adding `<s>`; 256,000 ids (Gemma's size) by default.

The learned tokens sit at the highest ids so that a corpus's ids pass 65,535; the ids between are
filler tokens no text reaches. Each folder holds tokenizer.json and a tokenizer_config.json, as a
Hugging Face model folder does.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers


def _relocated(vocab: dict[str, int], keep: int, top: int) -> dict[str, int]:
    """`vocab` with its first `keep` ids kept, the rest moved to end at `top` - 1, filler between."""
    order = sorted(vocab, key=vocab.__getitem__)
    fixed, learned = order[:keep], order[keep:]
    out = {token: i for i, token in enumerate(fixed)}
    start = top - len(learned)
    out.update({f"<filler_{i}>": i for i in range(keep, start)})
    out.update({token: start + j for j, token in enumerate(learned)})
    return out


def _save(tok: Tokenizer, folder: Path, bos: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"bos_token": bos, "add_bos_token": True}))
    return folder


def byte_level_folder(folder: Path, text: str, regular: int = 128_000, special: int = 256, learned: int = 600) -> Path:
    base = Tokenizer(models.BPE())
    base.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    base.train_from_iterator(
        [text], trainers.BpeTrainer(vocab_size=256 + learned, initial_alphabet=alphabet, show_progress=False)
    )
    doc = json.loads(base.to_str())
    doc["model"]["vocab"] = _relocated(doc["model"]["vocab"], 256, regular)
    tok = Tokenizer.from_str(json.dumps(doc))
    tok.decoder = decoders.ByteLevel()
    names = ["<|begin_of_text|>", "<|end_of_text|>"] + [f"<|reserved_special_token_{i}|>" for i in range(special - 2)]
    tok.add_special_tokens([AddedToken(name, special=True) for name in names])
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", regular)]
    )
    return _save(tok, folder, "<|begin_of_text|>")


def sentencepiece_folder(folder: Path, text: str, vocab: int = 256_000, learned: int = 600) -> Path:
    specials = ["<unk>", "<s>", "</s>"]
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    base = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    base.normalizer = normalizer
    base.train_from_iterator(
        [text],
        trainers.BpeTrainer(
            vocab_size=len(specials) + len(byte_tokens) + learned, special_tokens=specials + byte_tokens,
            show_progress=False, max_token_length=16,
        ),
    )  # fmt: skip
    doc = json.loads(base.to_str())
    doc["model"]["vocab"] = _relocated(doc["model"]["vocab"], len(specials) + len(byte_tokens), vocab)
    doc["added_tokens"] = [t for t in doc["added_tokens"] if t["content"] in specials]
    tok = Tokenizer.from_str(json.dumps(doc))
    tok.normalizer = normalizer
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return _save(tok, folder, "<s>")
