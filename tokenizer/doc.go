// Package tokenizer turns text into the token ids a Hugging Face BPE model expects, and back,
// exactly as the Rust `tokenizers` library (0.23) does, and renders the model's Jinja chat template
// exactly as `transformers.apply_chat_template` does. Two BPE families are supported: byte-level
// BPE (Qwen2/2.5/3, Qwen3.5, Llama 3, GPT-2, gpt-oss's o200k_harmony) and SentencePiece-style BPE with byte fallback
// (Gemma 3).
//
// # Pipeline
//
// [Tokenizer.Encode] reproduces `Tokenizer.encode(text, add_special_tokens=False)`;
// [Tokenizer.EncodeWithSpecials] with AddSpecialTokens is `add_special_tokens=True` (the
// TemplateProcessing post-processor adds Llama's <|begin_of_text|> or Gemma's <bos>):
//
//  1. Invalid UTF-8 is repaired the way Rust's `String::from_utf8_lossy` and Python's
//     `bytes.decode("utf-8", "replace")` do: every maximal ill-formed subsequence becomes one U+FFFD.
//  2. Added tokens whose `normalized` flag is false (Qwen's `<|im_start|>`, `<think>`, ...) are found
//     in the raw text, leftmost-longest, honouring `single_word`, `lstrip` and `rstrip`.
//  3. The text between them is normalized (NFC, or Gemma's " " -> "▁", as tokenizer.json says),
//     then searched for the added tokens whose `normalized` flag is true.
//  4. Byte-level: the remaining text is split by the pre-tokenizer regex (Qwen2, Qwen3.5, Llama 3,
//     GPT-2 or o200k flavour), reproduced by a hand-written scanner that includes the regex's
//     backtracking and lookahead; each piece is mapped to byte-level symbols.
//     SentencePiece-style: each normalized segment is one word (Gemma's Split on " " never fires
//     after the normalizer); its symbols are its characters, or the <0xNN> byte-fallback tokens of
//     a character outside the vocab.
//  5. The symbols are merged by BPE merge rank.
//
// [Tokenizer.Decode] reproduces `decode(ids)`: the ByteLevel decoder, or Gemma's Replace "▁" -> " ",
// ByteFallback (a run of byte tokens that is not valid UTF-8 becomes one U+FFFD per byte), Fuse.
//
// Repositories saved without tokenizer.json (GPT-2 fine-tunes) are read from vocab.json and
// merges.txt as transformers' GPT2Tokenizer reads them ([CompileVocabMerges]).
//
// # Compiled tables
//
// [Compile] reads tokenizer.json and tokenizer_config.json once (at pack time) and produces one
// self-describing little-endian blob (layout in tables.go). [Load] builds a [Tokenizer] straight
// from that blob without JSON parsing and without copying the large tables, so a memory-mapped
// bundle section can be used directly; every count and offset is validated and a CRC-32C guards
// the whole blob.
//
// # Concurrency
//
// A [Tokenizer] is immutable after [Load] and safe for concurrent use. The BPE word cache lives in
// per-goroutine scratch encoders drawn from a sync.Pool, so concurrent Encode calls never contend
// on a lock; each cache holds at most a bounded number of words and the GC may drop idle ones.
//
// # Chat templates
//
// [Tokenizer.ApplyChatTemplate] renders the template with a built-in Jinja2 interpreter (package
// tokenizer/internal/jinja) configured like transformers' ImmutableSandboxedEnvironment with
// trim_blocks and lstrip_blocks, HF's `tojson` (json.dumps with ensure_ascii=False), and the
// `raise_exception` and `strftime_now` globals. JSON objects keep their key order ([Object]).
// A gpt-oss tokenizer (its special tokens are the harmony control tokens) that comes without a
// template gets the built-in harmony template ([HarmonyChatTemplate]), which renders what the
// model repository's chat_template.jinja renders.
package tokenizer
