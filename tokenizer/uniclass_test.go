package tokenizer

import (
	"testing"
	"unicode/utf8"
)

// TestASCIIClassMatchesTable: the inlined ASCII table agrees with the Unicode-derived one.
func TestASCIIClassMatchesTable(t *testing.T) {
	tab := classTable()
	for c := 0; c < utf8.RuneSelf; c++ {
		if asciiClass[c] != tab[c] {
			t.Errorf("%q: ascii %05b, table %05b", rune(c), asciiClass[c], tab[c])
		}
	}
}
