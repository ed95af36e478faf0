package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// Decoding SentencePiece-style tables, as HF's decoder chain Replace("▁" -> " "), ByteFallback,
// Fuse: ByteFallback collects consecutive <0xNN> tokens and emits their bytes when they form valid
// UTF-8, else one U+FFFD per token; every other token is its spelling with "▁" as a space.

// decodeSP is DecodeWith for SentencePiece-style tables.
func (tk *Tokenizer) decodeSP(ids []int, opts DecodeOptions) string {
	t := tk.t
	buf := make([]byte, 0, 4*len(ids))
	var run []byte
	for _, id := range ids {
		if !tk.decodable(id, opts) {
			continue
		}
		d := t.decodeBytes(id)
		if t.tokFlags[id]&tokByte != 0 {
			run = append(run, d[0])
			continue
		}
		buf = closeByteRun(buf, run, false)
		run = run[:0]
		buf = append(buf, d...)
	}
	return string(closeByteRun(buf, run, false))
}

// decodable reports whether id takes part in decoding: known, and not a skipped special token.
func (tk *Tokenizer) decodable(id int, opts DecodeOptions) bool {
	t := tk.t
	if id < 0 || id >= t.vocab {
		return false
	}
	f := t.tokFlags[id]
	return f&tokPresent != 0 && !(opts.SkipSpecialTokens && f&tokSpecial != 0)
}

// closeByteRun appends what a finished run of byte-fallback bytes decodes to: the bytes when they
// are valid UTF-8 (and not already known to be invalid), else one U+FFFD per byte.
func closeByteRun(buf, run []byte, poisoned bool) []byte {
	if !poisoned && utf8.Valid(run) {
		return append(buf, run...)
	}
	return append(buf, strings.Repeat("\uFFFD", len(run))...)
}

// addSP is StreamDecoder.Add for SentencePiece-style tables. A run of byte tokens is held back
// until it ends, because one invalid byte anywhere in it turns the whole run into U+FFFD; once a
// run can no longer become valid UTF-8, its bytes are emitted as U+FFFD as they come.
func (d *StreamDecoder) addSP(id int) string {
	t := d.tk.t
	if !d.tk.decodable(id, d.opts) {
		return ""
	}
	b := t.decodeBytes(id)
	if t.tokFlags[id]&tokByte != 0 {
		if d.poisoned {
			return "\uFFFD"
		}
		d.pending = append(d.pending, b[0])
		keep := incompleteTail(d.pending)
		if utf8.Valid(d.pending[:len(d.pending)-keep]) {
			return ""
		}
		out := strings.Repeat("\uFFFD", len(d.pending))
		d.pending, d.poisoned = d.pending[:0], true
		return out
	}
	out := closeByteRun(nil, d.pending, d.poisoned)
	d.pending, d.poisoned = d.pending[:0], false
	return string(append(out, b...))
}
