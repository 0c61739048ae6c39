#!/usr/bin/env python3
"""Writes the small synthetic tokenizer.json files of testdata/ (one of
each SentencePiece kind) and the texts they are checked on. Their
reference ids (synthetic.json) come from reference.js:

  python3 synthetic.py
  node reference.js NODE_PREFIX synthetic_texts.json \\
    spm_bpe=../spm_bpe.json meta_first=../meta_first.json \\
    meta_always=../meta_always.json unigram=../unigram.json \\
    unigram_fallback=../unigram_fallback.json > synthetic.json
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.dirname(HERE)
M = "\u2581"


def special(i, c, normalized=False, sp=True, **kw):
    d = {"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": normalized, "special": sp}
    d.update(kw)
    return d


def bpe_model(words, chars, byte_fallback, fuse_unk):
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    if byte_fallback:
        for b in range(256):
            vocab["<0x%02X>" % b] = len(vocab)
    for c in chars:
        vocab.setdefault(c, len(vocab))
    merges = []
    for w in words:  # merged left to right: "▁ t", "▁t h", …
        cur = w[0]
        for c in w[1:]:
            vocab.setdefault(c, len(vocab))
            if [cur, c] not in merges:
                merges.append([cur, c])
            cur += c
            vocab.setdefault(cur, len(vocab))
    return {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": fuse_unk, "byte_fallback": byte_fallback,
            "ignore_merges": False, "vocab": vocab, "merges": merges}


def write(name, f):
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as fh:
        json.dump(f, fh, ensure_ascii=False, indent=1)
        fh.write("\n")


CHARS = list("abcdefghijklmnopqrstuvwxyz,.!?'()=:0123456789\n\t" + M) + ["中", "文"]
WORDS = [M + "the", M + "hello", M + "world", "ll", "he", M + M, M + M + M + M, "in", "ing", M + "t", "中文", "\n\n"]

# Llama 2 and Mistral v0.1: Prepend and Replace normalizers, no
# pre-tokenizer, byte fallback; added tokens that take the spaces before
# them (lstrip), match only as a word of their own (single_word), or are
# found in the normalized text (normalized).
write("spm_bpe.json", {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>"),
                     special(400, "<mask>", lstrip=True), special(401, "[w]", single_word=True),
                     special(402, "<n>", normalized=True, sp=False)],
    "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": M},
        {"type": "Replace", "pattern": {"String": " "}, "content": M}]},
    "pre_tokenizer": None, "post_processor": None, "decoder": None,
    "model": bpe_model(WORDS, CHARS, True, True)})

# Newer Llama/Mistral conversions: Metaspace, prepended to the text's
# first piece only, not split; unknown characters fused into one <unk>.
write("meta_first.json", {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")],
    "normalizer": None,
    "pre_tokenizer": {"type": "Metaspace", "replacement": M, "prepend_scheme": "first", "split": False},
    "post_processor": None, "decoder": None,
    "model": bpe_model(WORDS, CHARS, False, True)})

# Metaspace prepended to every piece and split at each "▁"; unknown
# characters one <unk> each (fuse_unk false); an rstrip added token.
write("meta_always.json", {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>"),
                     special(100000, "<sep>", rstrip=True)],
    "normalizer": None,
    "pre_tokenizer": {"type": "Metaspace", "replacement": M, "prepend_scheme": "always", "split": True},
    "post_processor": None, "decoder": None,
    "model": bpe_model(WORDS, CHARS, False, False)})


def unigram_model(byte_fallback):
    vocab = [["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0]]
    if byte_fallback:
        for b in range(256):
            vocab.append(["<0x%02X>" % b, 0.0])
    pieces = {
        M: -2.0, M + "the": -3.0, M + "hello": -4.0, "hello": -5.0, "he": -4.5, "llo": -4.6, "l": -5.5,
        "o": -5.0, "h": -5.2, "e": -5.1, M + "world": -4.2, "wor": -4.9, "ld": -4.8, "w": -6.0, "r": -5.3,
        "d": -5.4, "t": -5.0, M + "t": -4.0, "the": -3.5, "a": -4.0, "b": -4.1, "ab": -6.5, "abab": -7.0,
        "c": -4.4, "n": -4.3, "i": -4.2, "g": -4.6, "in": -4.0, "ing": -3.9, "s": -4.0, M + "s": -4.4,
        "x": -9.0, "y": -9.0, "z": -9.0, M + "a": -3.3, "中": -6.0, "文": -6.0, "中文": -8.0, ",": -3.0,
        ".": -3.0, "!": -3.5, "1": -5.0, "2": -5.0, "12": -9.5, "\n": -4.0,
    }
    for p, s in pieces.items():
        vocab.append([p, s])
    return {"type": "Unigram", "unk_id": 0, "vocab": vocab, "byte_fallback": byte_fallback}


# T5-style: split at whitespace, then Metaspace on each word.
write("unigram.json", {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")],
    "normalizer": None,
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"},
        {"type": "Metaspace", "replacement": M, "prepend_scheme": "always", "split": True}]},
    "post_processor": None, "decoder": None,
    "model": unigram_model(False)})

# Gemma-style normalizer (spaces replaced, nothing prepended) over a
# Unigram with byte fallback.
write("unigram_fallback.json", {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")],
    "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": M},
    "pre_tokenizer": None, "post_processor": None, "decoder": None,
    "model": unigram_model(True)})

TEXTS = [
    "", " ", "  ", "    ", "the", " the", "the hello world", "hello  world", "  hello", "hello ",
    "thing ring sing", "hello\n\nworld\n", "\t\tindented", "中文 文中", "中国", "é", "éè 😀 x",
    "QQQ unknown CAPS", "a b ab abab ababab", "12 121 2112", "(x) = y: z, w!", M + "meta" + M + " char",
    "<s>hello</s>", "hello<s>", "<s> the", "<sep>   the", "the<sep>the", "<unk>", "xyz" * 20,
    "hello world " * 30,
    "a <mask> b", "x   <mask>", "<mask>", "[w] a[w] [w]b é[w] _[w] 1[w] ([w])", "hello <n> world<n>", "<n>", " <n>",
]
with open(os.path.join(HERE, "synthetic_texts.json"), "w", encoding="utf-8") as fh:
    json.dump(TEXTS, fh, ensure_ascii=False, indent=0)
    fh.write("\n")
