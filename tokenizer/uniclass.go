package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// Character classes used by the pre-tokenizer regexes and the added-token word checks.
// The sets follow Oniguruma (used by HF tokenizers for Split patterns) and Rust's regex crate
// (used for added-token single_word/lstrip/rstrip):
//   - \p{L}: general category L (Lu, Ll, Lt, Lm, Lo); \p{N}: Nd, Nl, No; \p{M}: Mn, Mc, Me.
//   - \s: U+0009..U+000D, U+0085 and categories Zs, Zl, Zp, which is exactly Unicode White_Space.
//   - \w (Rust regex, Unicode): Alphabetic, M, Nd, Pc and Join_Control.
const (
	clsL   uint8 = 1 << iota // \p{L}
	clsN                     // \p{N}
	clsS                     // \s, including CR and LF
	clsNL                    // CR or LF
	clsW                     // \w of Rust's regex crate
	clsM                     // \p{M} (combining marks; only the Qwen3.5 pattern names them)
	clsUp                    // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], the o200k pattern's upper-case run
	clsLow                   // [\p{Ll}\p{Lm}\p{Lo}\p{M}], the o200k pattern's lower-case run
)

// bmpClass holds the class bits of every code point below U+10000. It is built on first use
// (about 0.3 ms) rather than at package init, so programs that import the package without
// encoding pay nothing.
var (
	bmpOnce  sync.Once
	bmpClass *[0x10000]uint8
)

func classTable() *[0x10000]uint8 {
	bmpOnce.Do(func() {
		t := new([0x10000]uint8)
		setRanges(t, unicode.L, clsL|clsW)
		setRanges(t, unicode.N, clsN)
		setRanges(t, unicode.White_Space, clsS)
		setRanges(t, unicode.Nl, clsW)
		setRanges(t, unicode.Other_Alphabetic, clsW)
		setRanges(t, unicode.M, clsW|clsM)
		setRanges(t, unicode.Nd, clsW)
		setRanges(t, unicode.Pc, clsW)
		setRanges(t, unicode.Join_Control, clsW)
		setRanges(t, unicode.Lu, clsUp)
		setRanges(t, unicode.Lt, clsUp)
		setRanges(t, unicode.Ll, clsLow)
		setRanges(t, unicode.Lm, clsUp|clsLow)
		setRanges(t, unicode.Lo, clsUp|clsLow)
		setRanges(t, unicode.M, clsUp|clsLow)
		t['\r'] |= clsNL
		t['\n'] |= clsNL
		bmpClass = t
	})
	return bmpClass
}

func setRanges(t *[0x10000]uint8, rt *unicode.RangeTable, bits uint8) {
	for _, r := range rt.R16 {
		for c := uint32(r.Lo); c <= uint32(r.Hi); c += uint32(r.Stride) {
			t[c] |= bits
		}
	}
	for _, r := range rt.R32 {
		if r.Lo >= 0x10000 {
			break
		}
		for c := r.Lo; c <= r.Hi && c < 0x10000; c += r.Stride {
			t[c] |= bits
		}
	}
}

// classOf returns the class bits of r; tab must be classTable().
func classOf(tab *[0x10000]uint8, r rune) uint8 {
	if uint32(r) < 0x10000 {
		return tab[r]
	}
	var k uint8
	if unicode.IsLetter(r) {
		k |= clsL | clsW
	}
	if unicode.IsNumber(r) {
		k |= clsN
	}
	if unicode.In(r, unicode.Nl, unicode.Other_Alphabetic, unicode.M, unicode.Nd, unicode.Pc) {
		k |= clsW
	}
	if unicode.Is(unicode.M, r) {
		k |= clsM | clsUp | clsLow
	}
	if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo) {
		k |= clsUp
	}
	if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo) {
		k |= clsLow
	}
	if unicode.Is(unicode.White_Space, r) {
		k |= clsS
	}
	return k
}

// asciiClass is the class table of ASCII; a fixed-size array lets classAt inline without
// bounds checks. It is filled in init from the same definitions as the full table.
var asciiClass [utf8.RuneSelf]uint8

func init() {
	for c := rune(0); c < utf8.RuneSelf; c++ {
		var k uint8
		switch {
		case c >= 'a' && c <= 'z':
			k = clsL | clsW | clsLow
		case c >= 'A' && c <= 'Z':
			k = clsL | clsW | clsUp
		case c >= '0' && c <= '9':
			k = clsN | clsW
		case c == '_':
			k = clsW
		case c == '\r' || c == '\n':
			k = clsS | clsNL
		case c == ' ' || (c >= '\t' && c <= '\f'):
			k = clsS
		}
		asciiClass[c] = k
	}
}

// classAt returns the class bits and byte width of the character at s[i]; the ASCII case is
// small enough to inline into the scanner loops. classTable() must have run.
func classAt(s string, i int) (uint8, int) {
	if b := s[i]; b < utf8.RuneSelf {
		return asciiClass[b], 1
	}
	return classAtSlow(s, i)
}

// classAtSlow is classAt for a multi-byte character.
func classAtSlow(s string, i int) (uint8, int) {
	r, w := utf8.DecodeRuneInString(s[i:])
	return classOf(bmpClass, r), w
}

// runeAt decodes the rune starting at s[i]; s must be valid UTF-8 (the encoder repairs it first).
func runeAt(s string, i int) (rune, int) {
	if b := s[i]; b < utf8.RuneSelf {
		return rune(b), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// lastRune decodes the rune that ends at s[:i].
func lastRune(s string, i int) rune {
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return r
}
