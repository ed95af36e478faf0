package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func TestBPEHeapMatchesScan(t *testing.T) {
	tk := qwen(t)
	r := rand.New(rand.NewPCG(3, 4))
	words := []string{"hello", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", " internationalization", "ĠĠĠĠ"}
	letters := []string{"a", "b", "e", "r", "s", "t", "in", "on", " ", "é", "中"}
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for n := 2 + r.IntN(60); n > 0; n-- {
			b.WriteString(letters[r.IntN(len(letters))])
		}
		words = append(words, b.String())
	}
	var e bpeScratch
	for _, w := range words {
		scan := slices.Clone(func() []uint32 {
			old := smallWordMax
			smallWordMax = 1 << 30
			defer func() { smallWordMax = old }()
			return e.bpe(tk.t, w)
		}())
		syms := make([]uint32, len(w))
		for i := range syms {
			syms[i] = tk.t.byteIDs[w[i]]
		}
		heapIDs := slices.Clone(e.bpeHeap(tk.t, syms))
		if !slices.Equal(scan, heapIDs) {
			t.Fatalf("%q: scan %v heap %v", w, scan, heapIDs)
		}
	}
}

// TestLongInputs exercises the heap path and the cache limits with long pieces.
func TestLongInputs(t *testing.T) {
	tk := qwen(t)
	for _, s := range []string{
		strings.Repeat("a", 5000),
		strings.Repeat("=-", 3000),
		strings.Repeat(" ", 4000) + "x",
		strings.Repeat("中文", 2000),
		strings.Repeat("\n", 3000),
	} {
		if got := tk.Decode(tk.Encode(s)); got != s {
			t.Fatalf("round trip of %d bytes failed", len(s))
		}
	}
}

func TestLossyUTF8(t *testing.T) {
	cases := map[string]string{
		"a\xffb":             "a\ufffdb",
		"\xe2\x82":           "\ufffd",             // truncated 3-byte sequence: one U+FFFD
		"\xe2\x82x":          "\ufffdx",            // ... followed by ASCII
		"\xf0\x9f\x98":       "\ufffd",             // truncated emoji
		"\xed\xa0\x80":       "\ufffd\ufffd\ufffd", // surrogate: ED then A0 is not allowed
		"\xc0\xaf":           "\ufffd\ufffd",       // overlong
		"\xf4\x90\x80\x80":   "\ufffd\ufffd\ufffd\ufffd",
		"ok \xe4\xb8\xad ok": "ok 中 ok",
	}
	for in, want := range cases {
		if got := lossyString(in); got != want {
			t.Errorf("lossyString(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestInvalidUTF8Encode: invalid input encodes exactly as its lossy repair does.
func TestInvalidUTF8Encode(t *testing.T) {
	tk := qwen(t)
	for _, s := range []string{"a\xffb", "\xe2\x82", "<|im_start|>\xff<|im_end|>", "\xf0\x9f\x98 hi", "\x80\x80\x80"} {
		want := tk.Encode(lossyString(s))
		if got := tk.Encode(s); !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", s, got, want)
		}
		if d := tk.Decode(tk.Encode(s)); d != lossyString(s) {
			t.Errorf("Decode(Encode(%q)) = %q", s, d)
		}
	}
}

func TestSpecialTokenOptions(t *testing.T) {
	tk := qwen(t)
	text := "<|im_start|>user\n<think>hi</think><|im_end|>"
	plain := tk.Encode(text)
	imStart, _ := tk.TokenID("<|im_start|>")
	think, _ := tk.TokenID("<think>")
	if plain[0] != imStart || !slices.Contains(plain, think) {
		t.Fatalf("Encode did not recognise added tokens: %v", plain)
	}
	split := tk.EncodeWithSpecials(text, EncodeOptions{SplitSpecialTokens: true})
	if slices.Contains(split, imStart) {
		t.Fatalf("SplitSpecialTokens still produced <|im_start|>: %v", split)
	}
	if !slices.Contains(split, think) {
		t.Fatalf("SplitSpecialTokens must keep non-special added token <think>: %v", split)
	}
	if d := tk.Decode(split); d != text {
		t.Fatalf("decode of split encoding = %q", d)
	}
	// Qwen's ByteLevel post-processor adds nothing.
	if got := tk.EncodeWithSpecials(text, EncodeOptions{AddSpecialTokens: true}); !slices.Equal(got, plain) {
		t.Fatalf("AddSpecialTokens changed a ByteLevel encoding: %v", got)
	}
	if got := tk.DecodeWith(plain, DecodeOptions{SkipSpecialTokens: true}); got != "user\n<think>hi</think>" {
		t.Fatalf("SkipSpecialTokens decode = %q", got)
	}
}

func TestEncodeBatchMatchesEncode(t *testing.T) {
	tk := qwen(t)
	recs := readJSONL[tokRecord](t, "tokenizer-public.jsonl")
	texts := make([]string, len(recs))
	for i, r := range recs {
		texts[i] = r.Text
	}
	got := tk.EncodeBatch(texts, EncodeOptions{}, 4)
	for i, r := range recs {
		if !slices.Equal(got[i], r.IDs) {
			t.Fatalf("record %d differs in batch encoding", i)
		}
	}
}

func TestAccessors(t *testing.T) {
	tk := qwen(t)
	if tk.VocabSize() != 151669 {
		t.Errorf("VocabSize = %d, want 151669", tk.VocabSize())
	}
	eos, ok := tk.TokenID("<|im_end|>")
	if !ok || tk.EOS() != eos || !slices.Equal(tk.EOSIDs(), []int{eos}) {
		t.Errorf("EOS = %d (ids %v), <|im_end|> = %d", tk.EOS(), tk.EOSIDs(), eos)
	}
	if pad, _ := tk.TokenID("<|endoftext|>"); tk.PAD() != pad || tk.BOS() != -1 {
		t.Errorf("PAD = %d (want %d), BOS = %d (want -1)", tk.PAD(), pad, tk.BOS())
	}
	if s, ok := tk.Token(21927); !ok || s != "ĠHello" {
		t.Errorf("Token(21927) = %q, %v", s, ok)
	}
	if id, ok := tk.TokenID("ĠHello"); !ok || id != 21927 {
		t.Errorf("TokenID(ĠHello) = %d, %v", id, ok)
	}
	if string(tk.TokenBytes(21927)) != " Hello" {
		t.Errorf("TokenBytes(21927) = %q", tk.TokenBytes(21927))
	}
	if _, ok := tk.Token(-1); ok {
		t.Error("Token(-1) reported ok")
	}
	if _, ok := tk.Token(tk.VocabSize()); ok {
		t.Error("Token(VocabSize) reported ok")
	}
	if !tk.IsSpecial(eos) || tk.IsSpecial(21927) {
		t.Error("IsSpecial is wrong")
	}
	in := tk.Info()
	if in.VocabSize != 151669 || in.ModelVocabSize != 151643 || in.Merges != 151387 || in.AddedTokens != 26 ||
		in.SpecialTokens != 14 || in.PreTokenizer != "qwen2" || in.Normalizer != "NFC" || !in.HasChatTemplate ||
		in.EOS == nil || in.EOS.Text != "<|im_end|>" || in.PAD == nil || in.PAD.Text != "<|endoftext|>" || in.BOS != nil {
		t.Errorf("Info = %+v", in)
	}
}

// TestStreamDecoder feeds ids one at a time: no output may contain U+FFFD for a character split
// across tokens, and the concatenation must equal Decode.
func TestStreamDecoder(t *testing.T) {
	tk := qwen(t)
	for _, r := range readJSONL[tokRecord](t, "tokenizer-public.jsonl") {
		d := tk.NewStreamDecoder(DecodeOptions{})
		var b strings.Builder
		for _, id := range r.IDs {
			piece := d.Add(id)
			if !utf8.ValidString(piece) {
				t.Fatalf("%q: stream emitted invalid UTF-8 %q", r.Text, piece)
			}
			if strings.ContainsRune(piece, utf8.RuneError) && !strings.ContainsRune(r.Decoded, utf8.RuneError) {
				t.Fatalf("%q: stream emitted U+FFFD in %q", r.Text, piece)
			}
			b.WriteString(piece)
		}
		b.WriteString(d.Flush())
		if b.String() != r.Decoded {
			t.Fatalf("stream %q != decoded %q", b.String(), r.Decoded)
		}
	}
}

func TestStreamDecoderInvalidBytes(t *testing.T) {
	tk := qwen(t)
	byteID := func(b byte) int { return int(tk.t.byteIDs[b]) }
	// "€" is E2 82 AC: split over three ids, it appears only when complete.
	d := tk.NewStreamDecoder(DecodeOptions{})
	if a, b, c := d.Add(byteID(0xE2)), d.Add(byteID(0x82)), d.Add(byteID(0xAC)); a != "" || b != "" || c != "€" {
		t.Fatalf("split euro: %q %q %q", a, b, c)
	}
	// A lead byte followed by ASCII can never complete: U+FFFD is emitted with the ASCII.
	if a, b := d.Add(byteID(0xE2)), d.Add(byteID('x')); a != "" || b != "\ufffdx" {
		t.Fatalf("broken sequence: %q %q", a, b)
	}
	// A stray continuation byte is invalid at once.
	if a := d.Add(byteID(0x80)); a != "\ufffd" {
		t.Fatalf("stray continuation: %q", a)
	}
	// An incomplete character at the end becomes one U+FFFD on Flush, as Decode renders it.
	ids := []int{byteID('a'), byteID(0xF0), byteID(0x9F), byteID(0x98)}
	var out string
	for _, id := range ids {
		out += d.Add(id)
	}
	if out != "a" {
		t.Fatalf("held-back tail leaked: %q", out)
	}
	if f := d.Flush(); f != "\ufffd" || tk.Decode(ids) != "a\ufffd" {
		t.Fatalf("flush = %q, decode = %q", f, tk.Decode(ids))
	}
	if d.Flush() != "" {
		t.Fatal("second flush not empty")
	}
}

// FuzzRoundTrip: for valid UTF-8, decode(encode(s)) == NFC(s); for any bytes, encoding does not
// panic and equals the encoding of the lossy repair.
func FuzzRoundTrip(f *testing.F) {
	tk := qwen(f)
	for _, s := range []string{"Hello world", "e\u0301", "<|im_start|>x<|im_end|>", "\xff\xfe", "中文 😀", " \n\r\n\t x", "'S 'LL"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tk.Encode(s)
		if !utf8.ValidString(s) {
			if !slices.Equal(ids, tk.Encode(lossyString(s))) {
				t.Fatalf("invalid input %q not encoded as its repair", s)
			}
			return
		}
		if got, want := tk.Decode(ids), norm.NFC.String(s); got != want {
			// NFC applies between added tokens; text that spells an added token next to combining
			// marks can legitimately differ from NFC of the whole string.
			if segmentNFC(tk, s) != got {
				t.Fatalf("decode(encode(%q)) = %q, want %q", s, got, want)
			}
		}
	})
}

// segmentNFC normalizes s the way HF does: each span between added tokens on its own.
func segmentNFC(tk *Tokenizer, s string) string {
	var b strings.Builder
	for _, sg := range tk.raw.split(classTable(), s, false, nil) {
		if sg.id >= 0 {
			b.WriteString(s[sg.start:sg.end])
		} else {
			b.WriteString(norm.NFC.String(s[sg.start:sg.end]))
		}
	}
	return b.String()
}
