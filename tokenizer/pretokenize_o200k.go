package tokenizer

// nextPieceO200k implements the o200k pattern (preO200k) at s[i], trying its alternatives in the
// order a backtracking engine does:
//
//	A1 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	A2 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	\p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
//
// The optional first character is greedy, so A1 with it, A1 without it, A2 with it and A2
// without it are tried in that order; a mark may serve as that character and as part of a run,
// which is why the order matters ("\u0301A" is one A2 piece, "\u0301Ab" one A1 piece).
func nextPieceO200k(s string, i int) int {
	k, w := classAt(s, i)
	j := i + w
	prefix := k&(clsN|clsNL|clsL) == 0 && j < len(s)
	if prefix {
		if end, ok := o200kLower(s, j); ok {
			return end
		}
	}
	if end, ok := o200kLower(s, i); ok {
		return end
	}
	if prefix {
		if k2, _ := classAt(s, j); k2&clsUp != 0 {
			return o200kUpper(s, j)
		}
	}
	if k&clsUp != 0 {
		return o200kUpper(s, i)
	}
	// \p{N}{1,3}
	if k&clsN != 0 {
		for n := 1; n < 3 && j < len(s); n++ {
			k2, w2 := classAt(s, j)
			if k2&clsN == 0 {
				break
			}
			j += w2
		}
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
	const notOther = clsL | clsN | clsS
	if k&clsS == 0 {
		return crlfSlashRun(s, runNotIn(s, j, notOther))
	}
	if s[i] == ' ' && j < len(s) {
		if k2, w2 := classAt(s, j); k2&notOther == 0 {
			return crlfSlashRun(s, runNotIn(s, j+w2, notOther))
		}
	}
	return whitespacePiece(s, i)
}

// o200kLower matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+ and the optional
// contraction at s[q:]. The greedy upper run U gives back characters until a lower-class one
// starts the lower run: the character right after U if it is lower-class (Ll), which starts a
// full lower run; otherwise the last character of U that is also lower-class (Lm, Lo or a mark),
// whose lower run is that one character, since everything after it in U is Lu or Lt.
func o200kLower(s string, q int) (int, bool) {
	lastBoth := -1 // end of the last character of the upper run that is also lower-class
	p := q
	for p < len(s) {
		k, w := classAt(s, p)
		if k&clsUp == 0 {
			break
		}
		if k&clsLow != 0 {
			lastBoth = p + w
		}
		p += w
	}
	end := -1
	if p < len(s) {
		if k, w := classAt(s, p); k&clsLow != 0 {
			end = runIn(s, p+w, clsLow)
		}
	}
	if end < 0 {
		if lastBoth < 0 {
			return 0, false
		}
		end = lastBoth
	}
	return withContraction(s, end), true
}

// o200kUpper matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]* and the optional
// contraction at s[q:], whose first character is upper-class.
func o200kUpper(s string, q int) int {
	return withContraction(s, runIn(s, runIn(s, q, clsUp), clsLow))
}

// withContraction extends a letter run ending at end by a following (?i:'s|'t|'re|'ve|'m|'ll|'d).
func withContraction(s string, end int) int {
	if end+1 < len(s) && s[end] == '\'' {
		if n := contraction(s, end+1, true); n > 0 {
			return end + 1 + n
		}
	}
	return end
}

// crlfSlashRun returns the end of the [\r\n/]* run starting at s[j].
func crlfSlashRun(s string, j int) int {
	for j < len(s) && (s[j] == '\r' || s[j] == '\n' || s[j] == '/') {
		j++
	}
	return j
}
