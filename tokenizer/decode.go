package tokenizer

import (
	"unicode/utf8"
)

// DecodeOptions select HF decode variants.
type DecodeOptions struct {
	// SkipSpecialTokens drops special tokens, as HF's decode(skip_special_tokens=True).
	SkipSpecialTokens bool
}

// Decode returns the text of ids exactly as HF tokenizers' decode(ids, skip_special_tokens=False).
// With the ByteLevel decoder the tokens' bytes are concatenated and converted lossily, so bytes
// that do not form UTF-8 become U+FFFD (one per maximal ill-formed sequence). With the
// SentencePiece-style decoder (Replace "▁" -> " ", ByteFallback, Fuse) each run of consecutive
// byte-fallback tokens becomes its UTF-8 text, or one U+FFFD per byte when the run as a whole is
// not valid UTF-8. Unknown ids are skipped, as HF does.
func (tk *Tokenizer) Decode(ids []int) string {
	return tk.DecodeWith(ids, DecodeOptions{})
}

// DecodeWith is [Tokenizer.Decode] with options.
func (tk *Tokenizer) DecodeWith(ids []int, opts DecodeOptions) string {
	if tk.t.flags&flagByteFallback != 0 {
		return tk.decodeSP(ids, opts)
	}
	buf := make([]byte, 0, 4*len(ids))
	for _, id := range ids {
		buf = tk.appendToken(buf, id, opts)
	}
	if utf8.Valid(buf) {
		return string(buf)
	}
	return lossyString(string(buf))
}

func (tk *Tokenizer) appendToken(buf []byte, id int, opts DecodeOptions) []byte {
	t := tk.t
	if id < 0 || id >= t.vocab {
		return buf
	}
	f := t.tokFlags[id]
	if f&tokPresent == 0 || (opts.SkipSpecialTokens && f&tokSpecial != 0) {
		return buf
	}
	return append(buf, t.tokenBytes(id)...)
}

// StreamDecoder turns ids into text as they are generated. It emits only complete UTF-8
// characters, holding back the bytes of a character split across tokens until its last byte
// arrives, so a multi-byte character never shows up as U+FFFD. Bytes that can never become valid
// UTF-8 are emitted as U+FFFD as soon as that is certain, exactly as Decode would render them; at
// the end, Flush renders a held-back incomplete character as one U+FFFD. The concatenation of all
// outputs always equals Decode of all ids. A StreamDecoder is not safe for concurrent use.
type StreamDecoder struct {
	tk      *Tokenizer
	opts    DecodeOptions
	pending []byte
	// SentencePiece-style tables: pending holds the open run of byte-fallback tokens, which is
	// held back whole (one invalid byte turns every byte of the run into U+FFFD) unless poisoned:
	// already certain to be invalid, so its bytes are emitted as U+FFFD at once.
	poisoned bool
}

// NewStreamDecoder returns a decoder for one generated sequence.
func (tk *Tokenizer) NewStreamDecoder(opts DecodeOptions) *StreamDecoder {
	return &StreamDecoder{tk: tk, opts: opts}
}

// Add feeds one id and returns the text that became complete (possibly "").
func (d *StreamDecoder) Add(id int) string {
	if d.tk.t.flags&flagByteFallback != 0 {
		return d.addSP(id)
	}
	d.pending = d.tk.appendToken(d.pending, id, d.opts)
	keep := incompleteTail(d.pending)
	ready := d.pending[:len(d.pending)-keep]
	if len(ready) == 0 {
		return ""
	}
	var out string
	if utf8.Valid(ready) {
		out = string(ready)
	} else {
		out = lossyString(string(ready))
	}
	d.pending = append(d.pending[:0], d.pending[len(ready):]...)
	return out
}

// Flush returns whatever is held back (an incomplete character becomes U+FFFD) and resets the
// decoder for a new sequence.
func (d *StreamDecoder) Flush() string {
	if d.tk.t.flags&flagByteFallback != 0 {
		out := string(closeByteRun(nil, d.pending, d.poisoned))
		d.pending, d.poisoned = d.pending[:0], false
		return out
	}
	if len(d.pending) == 0 {
		return ""
	}
	out := lossyString(string(d.pending))
	d.pending = d.pending[:0]
	return out
}
