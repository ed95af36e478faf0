// Package grammar is the server's constrained decoding: it compiles a JSON Schema (or a tool-call
// format built around schemas) into a byte-level recognizer, and for each step of a generation
// computes the set of token ids that keep the output a viable prefix of an accepted text, with
// the end-of-sequence ids allowed only once the text is complete. Sampling among those tokens
// only (runtime.Sampler.SampleMasked) makes the output parse and validate whatever the model
// prefers, as OpenAI's structured outputs and vLLM's guided decoding do.
//
// # Pieces
//
//   - [Builder] turns schemas and literal texts into a graph of nodes; [Grammar] is the result,
//     immutable and shared by every request that uses it ([Cache] keeps the recent ones).
//   - The recognizer (machine.go) runs over bytes with a stack of frames, one per open value,
//     kept as persistent linked stacks in an arena: a step allocates one or two frames and
//     shares the rest, so trying a byte and backing off costs a truncation. anyOf keeps several
//     stacks (heads) alive at once until the bytes tell the alternatives apart. Opening a value
//     consults each node's first bytes, and opens each node at most once however many paths of
//     nested anyOf and $ref lead to it, so its cost follows the grammar's size, not its paths.
//   - [Vocab] holds, once per tokenizer, every token's bytes in a trie (in depth-first order,
//     each node with the end of its subtree) and the tokens that are plain string content.
//   - [Matcher] follows one generation: Mask walks the trie with each head of the recognizer's
//     state, so a shared prefix is stepped once and a dead prefix prunes its whole subtree; for
//     a head inside a string the plain tokens (most of the vocabulary) are added as one
//     precomputed bitset and only the rest is walked. Accept advances the state by a chosen
//     token. Both stop at [MaxTokenWork] steps and report a [WorkError], so no grammar can
//     hold its caller for long.
//   - Literal alternatives of an anyOf (lists of consts) are merged into one literal node,
//     which narrows its texts by binary search whatever their number.
//
// # What is accepted
//
// The JSON subset of [Builder.Schema] (see there), written with optional whitespace of at most
// [MaxWhitespace] bytes between tokens and none before or after the whole value. Numbers have at
// most 15 integer digits, 15 fraction digits and a 2-digit exponent, so every number the model
// writes fits an IEEE double (integers exactly) and parses in every language; JSON nested deeper than
// [MaxDepth] is not produced. A generation cut short by max_tokens is a prefix of valid JSON,
// not valid JSON (OpenAI documents the same).
package grammar
