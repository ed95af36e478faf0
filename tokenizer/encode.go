package tokenizer

import (
	"runtime"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// EncodeOptions select the HF behaviours that differ from plain [Tokenizer.Encode].
type EncodeOptions struct {
	// SplitSpecialTokens treats added tokens marked special (<|im_start|>, <|endoftext|>, ...) as
	// ordinary text when they occur in the input, so user text cannot inject control tokens.
	// This is HF tokenizers' encode_special_tokens=True (transformers' split_special_tokens=True).
	// Added tokens that are not special (Qwen's <think>, <tool_call>) are still recognised, as in HF.
	SplitSpecialTokens bool
	// AddSpecialTokens applies the post-processor, as HF's add_special_tokens=True: a
	// TemplateProcessing post-processor prepends/appends its special ids (e.g. Llama's
	// <|begin_of_text|>). Qwen's ByteLevel post-processor adds nothing.
	AddSpecialTokens bool
}

// Encode returns the ids of text exactly as HF tokenizers' encode(text, add_special_tokens=False)
// does: added and special tokens written in the text (such as "<|im_start|>") are recognised and
// become their ids; no BOS/EOS is added. Use [Tokenizer.EncodeWithSpecials] for the other
// behaviours.
//
// Invalid UTF-8 never causes a panic: each maximal ill-formed byte sequence is replaced by U+FFFD
// first, as Rust's String::from_utf8_lossy and Python's bytes.decode("utf-8", "replace") do, so
// the result is HF's encoding of that repaired string.
func (tk *Tokenizer) Encode(text string) []int {
	return tk.EncodeWithSpecials(text, EncodeOptions{})
}

// EncodeWithSpecials is [Tokenizer.Encode] with explicit control over special tokens.
func (tk *Tokenizer) EncodeWithSpecials(text string, opts EncodeOptions) []int {
	e := tk.pool.Get().(*encoder)
	out := e.encode(text, opts, make([]int, 0, len(text)/3+4))
	tk.pool.Put(e)
	return out
}

// AppendEncode appends the ids of text (as [Tokenizer.EncodeWithSpecials]) to dst and returns
// the extended slice; it lets hot loops reuse one buffer.
func (tk *Tokenizer) AppendEncode(dst []int, text string, opts EncodeOptions) []int {
	e := tk.pool.Get().(*encoder)
	dst = e.encode(text, opts, dst)
	tk.pool.Put(e)
	return dst
}

// EncodeBatch encodes texts on up to workers goroutines (GOMAXPROCS when workers <= 0) and
// returns the ids in input order.
func (tk *Tokenizer) EncodeBatch(texts []string, opts EncodeOptions, workers int) [][]int {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	out := make([][]int, len(texts))
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for w := 0; w < min(workers, len(texts)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= len(texts) {
					return
				}
				out[k] = tk.EncodeWithSpecials(texts[k], opts)
			}
		}()
	}
	wg.Wait()
	return out
}

const (
	cacheMaxWords = 1 << 15 // per encoder; the cache is cleared when it fills
	cacheMaxIDs   = 1 << 19
	cacheMaxLen   = 256 // HF's MAX_LENGTH: longer words are not cached
)

type cacheSpan struct{ start, n uint32 }

// encoder is per-goroutine scratch space plus a BPE word cache; Tokenizer.pool hands them out.
type encoder struct {
	tk    *Tokenizer
	tab   *[0x10000]uint8
	cache map[string]cacheSpan
	arena []uint32
	segs  []segment
	segs2 []segment
	bpeScratch
}

func newEncoder(tk *Tokenizer) *encoder {
	return &encoder{tk: tk, tab: classTable(), cache: make(map[string]cacheSpan, 1024)}
}

func (e *encoder) encode(text string, opts EncodeOptions, out []int) []int {
	t := e.tk.t
	if !utf8.ValidString(text) {
		text = lossyString(text)
	}
	if opts.AddSpecialTokens && t.post == postTemplate {
		for _, id := range t.prefix {
			out = append(out, int(id))
		}
	}
	segs := e.tk.raw.split(e.tab, text, opts.SplitSpecialTokens, e.segs[:0])
	for _, sg := range segs {
		if sg.id >= 0 {
			out = append(out, sg.id)
			continue
		}
		piece := text[sg.start:sg.end]
		if piece == "" {
			continue
		}
		if t.flags&flagNFC != 0 && !norm.NFC.IsNormalString(piece) {
			piece = norm.NFC.String(piece)
		}
		// The "▁" normalizer is applied on the fly by the SentencePiece-style symbol mapping,
		// except where the normalized text itself is needed: to find normalized added tokens.
		if t.flags&flagSpaceToMeta != 0 && e.tk.norm != nil {
			piece = strings.ReplaceAll(piece, " ", metaSpace)
		}
		if e.tk.norm == nil {
			out = e.encodePlain(piece, out)
			continue
		}
		segs2 := e.tk.norm.split(e.tab, piece, opts.SplitSpecialTokens, e.segs2[:0])
		for _, s2 := range segs2 {
			if s2.id >= 0 {
				out = append(out, s2.id)
			} else if s2.end > s2.start {
				out = e.encodePlain(piece[s2.start:s2.end], out)
			}
		}
		e.segs2 = segs2
	}
	e.segs = segs
	if opts.AddSpecialTokens && t.post == postTemplate {
		for _, id := range t.suffix {
			out = append(out, int(id))
		}
	}
	return out
}

// encodePlain pre-tokenizes s and appends the BPE ids of every piece.
func (e *encoder) encodePlain(s string, out []int) []int {
	kind := preKind(e.tk.t.pre)
	if kind == preNone {
		return e.wordSP(s, out)
	}
	for i := 0; i < len(s); {
		j := nextPiece(e.tab, kind, s, i)
		out = e.word(s[i:j], out)
		i = j
	}
	return out
}

// word appends the ids of one pre-token.
func (e *encoder) word(w string, out []int) []int {
	t := e.tk.t
	if len(w) == 1 {
		return append(out, int(t.byteIDs[w[0]]))
	}
	if t.flags&flagIgnoreMerges != 0 {
		if id, ok := lookupVocab(t, w, false); ok {
			return append(out, int(id))
		}
	}
	if sp, ok := e.cache[w]; ok {
		for _, id := range e.arena[sp.start : sp.start+sp.n] {
			out = append(out, int(id))
		}
		return out
	}
	ids := e.bpe(t, w)
	for _, id := range ids {
		out = append(out, int(id))
	}
	e.remember(w, ids)
	return out
}

// remember caches the ids of word w, as HF caches words shorter than MAX_LENGTH.
func (e *encoder) remember(w string, ids []uint32) {
	if len(w) >= cacheMaxLen {
		return
	}
	if len(e.cache) >= cacheMaxWords || len(e.arena)+len(ids) > cacheMaxIDs {
		clear(e.cache)
		e.arena = e.arena[:0]
	}
	e.cache[strings.Clone(w)] = cacheSpan{uint32(len(e.arena)), uint32(len(ids))}
	e.arena = append(e.arena, ids...)
}

// lossyString replaces each maximal ill-formed subsequence of s with U+FFFD, the substitution
// rule of Unicode §3.9 (U+FFFD policy) that Rust's from_utf8_lossy and Python's "replace" use.
func lossyString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			b.WriteByte(s[i])
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || w > 1 {
			b.WriteString(s[i : i+w])
			i += w
			continue
		}
		b.WriteString("\uFFFD")
		i += maximalSubpart(s[i:])
	}
	return b.String()
}

// maximalSubpart returns the length of the ill-formed sequence starting at s[0]: the lead byte
// plus the continuation bytes that still fit a well-formed sequence (Unicode Table 3-7).
func maximalSubpart[T string | []byte](s T) int {
	lo, hi, need := byte(0x80), byte(0xBF), 0
	switch c := s[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		lo, need = 0xA0, 2
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		hi, need = 0x9F, 2
	case c == 0xF0:
		lo, need = 0x90, 3
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		hi, need = 0x8F, 3
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(s); k++ {
		c := s[n]
		if c < lo || c > hi {
			break
		}
		n++
		lo, hi = 0x80, 0xBF
	}
	return n
}

// incompleteTail returns how many bytes at the end of b form the start of a well-formed sequence
// that more bytes could still complete (0 when b ends on a complete character or garbage).
func incompleteTail(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		start := len(b) - k
		c := b[start]
		if c < 0x80 {
			return 0
		}
		if c < 0xC0 {
			continue // continuation byte: look further back for the lead
		}
		if n := maximalSubpart(b[start:]); n == k && utf8Need(c) > k {
			return k
		}
		return 0
	}
	return 0
}

// utf8Need is the full length of a sequence with lead byte c (0 for an invalid lead).
func utf8Need(c byte) int {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 2
	case c >= 0xE0 && c <= 0xEF:
		return 3
	case c >= 0xF0 && c <= 0xF4:
		return 4
	}
	return 0
}
