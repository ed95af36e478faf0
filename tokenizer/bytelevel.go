package tokenizer

import "unicode/utf8"

// GPT-2's byte-level alphabet: every byte maps to a printable character. Printable Latin-1 bytes
// ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves; the other 68 bytes map to U+0100 upward in
// byte order. tokenizer.json stores vocab and merges in this alphabet ("Ġ" is the space byte).
var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteLevelDecode returns the bytes a byte-level token string stands for. ok is false when some
// character is outside the alphabet; HF's ByteLevel decoder then emits the token's own UTF-8
// bytes instead, which is what callers fall back to.
func byteLevelDecode(tok string) (out []byte, ok bool) {
	out = make([]byte, 0, len(tok))
	for _, r := range tok {
		b, found := runeToByte[r]
		if !found {
			return nil, false
		}
		out = append(out, b)
	}
	return out, true
}

// byteLevelEncode maps raw bytes to their byte-level string form.
func byteLevelEncode(b []byte) string {
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = utf8.AppendRune(out, byteToRune[c])
	}
	return string(out)
}
