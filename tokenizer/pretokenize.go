package tokenizer

import "unicode/utf8"

// Pre-tokenizer: a hand-written scanner that splits text exactly as the Split/ByteLevel regexes of
// HF tokenizers do (Oniguruma, leftmost alternative first, with backtracking). Go's regexp has no
// lookahead, and a backtracking engine is 10-20x slower, so each alternative is coded directly.
// pretokenize_oracle_test.go checks the scanner against github.com/dlclark/regexp2 running the
// original patterns.

// preKind names a supported pre-tokenizer regex. The values are stored in compiled tables.
type preKind uint32

const (
	// preQwen2 is Qwen2/Qwen2.5/Qwen3's Split pattern (single-digit numbers):
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
	preQwen2 preKind = 1
	// preLlama3 is the same pattern with \p{N}{1,3} (Llama 3 and others).
	preLlama3 preKind = 2
	// preGPT2 is the ByteLevel pre-tokenizer's built-in regex (use_regex=true):
	// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
	preGPT2 preKind = 3
	// preQwen35 is Qwen3.5's pattern: Qwen2's with combining marks (\p{M}) joining letter runs
	// and leaving the punctuation runs, so "e\u0301" or Devanagari vowel signs stay in their word:
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
	preQwen35 preKind = 4
	// preNone leaves each normalized segment whole: one BPE word. Gemma's tokenizer.json has a
	// Split on " " (MergedWithPrevious), but its normalizer has already replaced every space by
	// "▁", so that Split never fires; it compiles to this kind.
	preNone preKind = 5
	// preO200k is the o200k pattern of gpt-oss (o200k_harmony): case-aware letter runs (an
	// upper-case run followed by a lower-case run, marks joining both) that keep a trailing
	// contraction, \p{N}{1,3}, and punctuation runs that keep trailing CR, LF and "/":
	// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
	// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
	// \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
	preO200k preKind = 6
)

// Exact pattern texts as they appear in tokenizer.json, used to recognise a Split pre-tokenizer.
const (
	patternQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patternGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	patternQwen35 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patternO200k  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// String names the kind as Info reports it.
func (k preKind) String() string {
	switch k {
	case preQwen2:
		return "qwen2"
	case preLlama3:
		return "llama3"
	case preGPT2:
		return "gpt2"
	case preQwen35:
		return "qwen3.5"
	case preNone:
		return "none"
	case preO200k:
		return "o200k"
	}
	return "unknown"
}

// pattern returns the regex the kind reproduces.
func (k preKind) pattern() string {
	switch k {
	case preQwen2:
		return patternQwen2
	case preLlama3:
		return patternLlama3
	case preGPT2:
		return patternGPT2
	case preQwen35:
		return patternQwen35
	case preO200k:
		return patternO200k
	}
	return ""
}

// nextPiece returns the end of the pre-token that starts at s[i] (i < len(s)). Every character is
// covered by some alternative of the supported patterns, so pieces tile the text without gaps.
func nextPiece(tab *[0x10000]uint8, kind preKind, s string, i int) int {
	switch kind {
	case preGPT2:
		return nextPieceGPT2(tab, s, i)
	case preO200k:
		return nextPieceO200k(s, i)
	}
	// word is the class of the letter runs ([\p{L}\p{M}] for Qwen3.5, \p{L} otherwise); the
	// punctuation runs take every character outside word, \p{N} and \s.
	word := clsL
	if kind == preQwen35 {
		word = clsL | clsM
	}
	notOther := word | clsN | clsS
	c := s[i]
	k, w := classAt(s, i)
	j := i + w
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if c == '\'' && j < len(s) {
		if n := contraction(s, j, true); n > 0 {
			return j + n
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+ (or [\p{L}\p{M}]+). With the optional character taken first:
	// a character that is not L, N, CR or LF (a mark qualifies) followed by a run; otherwise a run
	// starting here. A mark followed by a run gives the same piece either way.
	if k&word != 0 {
		return runIn(s, j, word)
	}
	if k&(clsN|clsNL|clsL) == 0 && j < len(s) {
		if k2, w2 := classAt(s, j); k2&word != 0 {
			return runIn(s, j+w2, word)
		}
	}
	// \p{N} or \p{N}{1,3}
	if k&clsN != 0 {
		if kind == preLlama3 {
			for n := 1; n < 3 && j < len(s); n++ {
				k2, w2 := classAt(s, j)
				if k2&clsN == 0 {
					break
				}
				j += w2
			}
		}
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*' (marks excluded too for Qwen3.5)
	if k&clsS == 0 {
		return crlfRun(s, runNotIn(s, j, notOther))
	}
	if c == ' ' && j < len(s) {
		if k2, w2 := classAt(s, j); k2&notOther == 0 {
			return crlfRun(s, runNotIn(s, j+w2, notOther))
		}
	}
	return whitespacePiece(s, i)
}

// whitespacePiece returns the end of the piece that starts at the whitespace character s[i],
// taken by the last three alternatives that the Split patterns share, for the whitespace run W
// starting at i:
//
//	\s*[\r\n]+ : \s* first takes all of W and backtracks to the last CR/LF in W.
//	\s+(?!\S)  : all of W at the end of text, otherwise W minus its last character.
//	\s+        : a single whitespace character before a non-space.
func whitespacePiece(s string, i int) int {
	end, lastNL, prev, n := i, -1, i, 0
	for end < len(s) {
		k2, w2 := classAt(s, end)
		if k2&clsS == 0 {
			break
		}
		if k2&clsNL != 0 {
			lastNL = end + w2
		}
		prev = end
		end += w2
		n++
	}
	if lastNL >= 0 {
		return lastNL
	}
	if end == len(s) || n == 1 {
		return end
	}
	return prev
}

// nextPieceGPT2 implements 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+.
func nextPieceGPT2(tab *[0x10000]uint8, s string, i int) int {
	const notOther = clsL | clsN | clsS
	c := s[i]
	k, w := classAt(s, i)
	j := i + w
	if c == '\'' && j < len(s) {
		if n := contraction(s, j, false); n > 0 {
			return j + n
		}
	}
	if c == ' ' && j < len(s) {
		k2, w2 := classAt(s, j)
		switch {
		case k2&clsL != 0:
			return runIn(s, j+w2, clsL)
		case k2&clsN != 0:
			return runIn(s, j+w2, clsN)
		case k2&clsS == 0:
			return runNotIn(s, j+w2, notOther)
		}
	}
	switch {
	case k&clsL != 0:
		return runIn(s, j, clsL)
	case k&clsN != 0:
		return runIn(s, j, clsN)
	case k&clsS == 0:
		return runNotIn(s, j, notOther)
	}
	end, prev, n := i, i, 0
	for end < len(s) {
		k2, w2 := classAt(s, end)
		if k2&clsS == 0 {
			break
		}
		prev = end
		end += w2
		n++
	}
	if end == len(s) || n == 1 {
		return end
	}
	return prev
}

// contraction reports the byte length after the apostrophe of 's 't 're 've 'm 'll 'd at s[j:],
// or 0. With fold, letters match case-insensitively the way Oniguruma's (?i) does, which uses
// Unicode case folding: besides ASCII upper case, U+017F LATIN SMALL LETTER LONG S folds to s.
func contraction(s string, j int, fold bool) int {
	c1, w1 := runeAt(s, j)
	l1 := foldContraction(c1, fold)
	switch l1 {
	case 's', 't', 'm', 'd':
		return w1
	case 'r', 'v', 'l':
		if j+w1 >= len(s) {
			return 0
		}
		c2, w2 := runeAt(s, j+w1)
		l2 := foldContraction(c2, fold)
		if (l1 == 'l' && l2 == 'l') || (l1 != 'l' && l2 == 'e') {
			return w1 + w2
		}
	}
	return 0
}

func foldContraction(r rune, fold bool) rune {
	if !fold {
		return r
	}
	if r >= 'A' && r <= 'Z' {
		return r + ('a' - 'A')
	}
	if r == 0x17F {
		return 's'
	}
	return r
}

// runIn returns the end of the run of characters from s[j] whose class has a bit of mask
// (\p{L}* for mask clsL).
func runIn(s string, j int, mask uint8) int {
	for j < len(s) {
		if b := s[j]; b < utf8.RuneSelf { // ASCII fast path
			if asciiClass[b]&mask == 0 {
				return j
			}
			j++
			continue
		}
		k, w := classAtSlow(s, j)
		if k&mask == 0 {
			return j
		}
		j += w
	}
	return j
}

// runNotIn returns the end of the run of characters from s[j] whose class has no bit of mask
// ([^\s\p{L}\p{N}]* for mask clsL|clsN|clsS).
func runNotIn(s string, j int, mask uint8) int {
	for j < len(s) {
		if b := s[j]; b < utf8.RuneSelf { // ASCII fast path
			if asciiClass[b]&mask != 0 {
				return j
			}
			j++
			continue
		}
		k, w := classAtSlow(s, j)
		if k&mask != 0 {
			return j
		}
		j += w
	}
	return j
}

// crlfRun returns the end of the [\r\n]* run starting at s[j].
func crlfRun(s string, j int) int {
	for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
		j++
	}
	return j
}
