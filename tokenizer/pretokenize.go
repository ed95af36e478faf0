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
)

// Exact pattern texts as they appear in tokenizer.json, used to recognise a Split pre-tokenizer.
const (
	patternQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patternGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
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
	}
	return ""
}

// nextPiece returns the end of the pre-token that starts at s[i] (i < len(s)). Every character is
// covered by some alternative of the supported patterns, so pieces tile the text without gaps.
func nextPiece(tab *[0x10000]uint8, kind preKind, s string, i int) int {
	if kind == preGPT2 {
		return nextPieceGPT2(tab, s, i)
	}
	c := s[i]
	k, w := classAt(s, i)
	j := i + w
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if c == '\'' && j < len(s) {
		if n := contraction(s, j, true); n > 0 {
			return j + n
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if k&clsL != 0 {
		return letterRun(tab, s, j)
	}
	if k&(clsN|clsNL) == 0 && j < len(s) {
		if k2, w2 := classAt(s, j); k2&clsL != 0 {
			return letterRun(tab, s, j+w2)
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
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	if k&clsS == 0 {
		return crlfRun(s, otherRun(tab, s, j))
	}
	if c == ' ' && j < len(s) {
		if k2, w2 := classAt(s, j); k2&(clsL|clsN|clsS) == 0 {
			return crlfRun(s, otherRun(tab, s, j+w2))
		}
	}
	// Whitespace run W starting at i.
	// \s*[\r\n]+ : \s* first takes all of W and backtracks to the last CR/LF in W.
	// \s+(?!\S)  : all of W at the end of text, otherwise W minus its last character.
	// \s+        : a single whitespace character before a non-space.
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
			return letterRun(tab, s, j+w2)
		case k2&clsN != 0:
			return numberRun(tab, s, j+w2)
		case k2&clsS == 0:
			return otherRun(tab, s, j+w2)
		}
	}
	switch {
	case k&clsL != 0:
		return letterRun(tab, s, j)
	case k&clsN != 0:
		return numberRun(tab, s, j)
	case k&clsS == 0:
		return otherRun(tab, s, j)
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

// letterRun returns the end of the \p{L}* run starting at s[j].
func letterRun(tab *[0x10000]uint8, s string, j int) int {
	for j < len(s) {
		if b := s[j]; b < utf8.RuneSelf { // ASCII fast path
			if k := asciiClass[b]; k&clsL == 0 {
				return j
			}
			j++
			continue
		}
		k, w := classAtSlow(s, j)
		if k&clsL == 0 {
			return j
		}
		j += w
	}
	return j
}

// numberRun returns the end of the \p{N}* run starting at s[j].
func numberRun(tab *[0x10000]uint8, s string, j int) int {
	for j < len(s) {
		if b := s[j]; b < utf8.RuneSelf { // ASCII fast path
			if k := asciiClass[b]; k&clsN == 0 {
				return j
			}
			j++
			continue
		}
		k, w := classAtSlow(s, j)
		if k&clsN == 0 {
			return j
		}
		j += w
	}
	return j
}

// otherRun returns the end of the [^\s\p{L}\p{N}]* run starting at s[j].
func otherRun(tab *[0x10000]uint8, s string, j int) int {
	for j < len(s) {
		if b := s[j]; b < utf8.RuneSelf { // ASCII fast path
			if k := asciiClass[b]; k&(clsL|clsN|clsS) != 0 {
				return j
			}
			j++
			continue
		}
		k, w := classAtSlow(s, j)
		if k&(clsL|clsN|clsS) != 0 {
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
