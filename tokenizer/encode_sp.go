package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// SentencePiece-style BPE encoding (Gemma), as HF's BPE::merge_word with byte_fallback: a word's
// initial symbols are its characters, each the vocab token that spells it, or else the
// byte-fallback tokens <0xNN> of its UTF-8 bytes; then the merges apply by rank exactly as for
// byte-level words.

// wordSP appends the ids of one normalized segment, which the "none" pre-tokenizer leaves whole.
// Spaces in w stand for "▁" (the normalizer's output), so raw text can be passed without
// building the normalized string.
func (e *encoder) wordSP(w string, out []int) []int {
	t := e.tk.t
	if w == "" {
		return out
	}
	if t.flags&flagIgnoreMerges != 0 {
		if id, ok := lookupVocab(t, strings.ReplaceAll(w, " ", metaSpace), true); ok {
			return append(out, int(id))
		}
	}
	if sp, ok := e.cache[w]; ok {
		for _, id := range e.arena[sp.start : sp.start+sp.n] {
			out = append(out, int(id))
		}
		return out
	}
	ids := e.mergeSyms(t, e.tk.appendCharSyms(e.syms[:0], w))
	for _, id := range ids {
		out = append(out, int(id))
	}
	e.remember(w, ids)
	return out
}

// appendCharSyms appends the initial symbols of w to syms.
func (tk *Tokenizer) appendCharSyms(syms []uint32, w string) []uint32 {
	t := tk.t
	for i := 0; i < len(w); {
		c := w[i]
		if c < utf8.RuneSelf {
			switch id := tk.asciiIDs[c]; {
			case c == ' ' && t.flags&flagSpaceToMeta != 0:
				syms = append(syms, tk.metaSyms...)
			case id != noID:
				syms = append(syms, id)
			default:
				syms = append(syms, t.byteIDs[c])
			}
			i++
			continue
		}
		_, n := utf8.DecodeRuneInString(w[i:]) // w is valid UTF-8: the encoder repaired it
		if id, ok := lookupVocab(t, w[i:i+n], true); ok {
			syms = append(syms, id)
		} else {
			for k := i; k < i+n; k++ {
				syms = append(syms, t.byteIDs[w[k]])
			}
		}
		i += n
	}
	return syms
}
