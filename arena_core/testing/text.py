"""Deterministic English-like text and a small BPE tokenizer trained on it, for tests and rigs.

Nothing here is a book: the text is generated from a word list with a seeded RNG, so tests need
no download and no stored third-party text.
"""

from __future__ import annotations

import random
from pathlib import Path

WORDS = (
    "the of and to in is that it was for on are as with his they at be this from have or by one had "
    "not but what all were when we there can an your which their said if do will each about how up out "
    "them then she many some so these would other into has more her two like him see time could no make "
    "than first been its who now people my made over did down only way find use may water long little "
    "very after words called just where most know get through back much before go good new write our "
    "used me man too any day same right look think also around another came come work three word must "
    "because does part even place well such here take why things help put years different away again off "
    "went old number great tell men say small every found still between name should home big give air line "
    "set own under read last never us left end along while might next sound below saw something thought "
    "both few those always looked show large often together asked house don't world going want school "
    "important until form food keep children feet land side without boy once animals life enough took "
    "sometimes four head above kind began almost live page got earth need far hand high year mother light "
    "parts country father let night following picture being study second eyes soon times story boys since "
    "white days ever paper hard near sentence better best across during today others however sure means "
    "knew it's try told young miles sun ways thing whole hear example heard several change answer room sea "
    "against top turned learn point city play toward five using himself usually"
).split()


def english_like_text(words: int, seed: int = 0) -> str:
    """``words`` words in sentences of 6-18 words, capitalised, with commas and full stops."""
    rng = random.Random(seed)
    sentences: list[str] = []
    produced = 0
    while produced < words:
        length = min(rng.randint(6, 18), words - produced)
        chosen = [rng.choice(WORDS) for _ in range(length)]
        if length > 8:
            chosen[rng.randint(2, length - 3)] += ","
        chosen[0] = chosen[0].capitalize()
        sentences.append(" ".join(chosen) + ".")
        produced += length
    return " ".join(sentences)


def write_test_tokenizer(path: Path, vocab_size: int = 800) -> Path:
    """Train a byte-level BPE tokenizer on generated text and save it as ``tokenizer.json``.

    Byte-level BPE round-trips any text exactly, like the tokenizers real servers use.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator([english_like_text(20000, seed=s) for s in range(3)], trainer=trainer)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path))
    return path
