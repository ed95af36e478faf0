package tokenizer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// synthSPTokenizer builds a small SentencePiece-style tokenizer.json shaped like Gemma's: special
// tokens, the 256 byte-fallback tokens, a few characters and merges, the "▁" normalizer, a Split
// on " ", the Replace + ByteFallback + Fuse decoder and a <bos> TemplateProcessing.
func synthSPTokenizer(tb testing.TB, mutate func(m map[string]any)) []byte {
	tb.Helper()
	vocab := map[string]any{"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3}
	next := 4
	for c := 0; c < 256; c++ {
		vocab[fmt.Sprintf("<0x%02X>", c)] = next
		next++
	}
	for _, ch := range []string{"▁", "h", "e", "l", "o", "w", "r", "d", "中", "<0x+A>"} {
		vocab[ch] = next
		next++
	}
	merges := [][2]string{{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"▁", "w"}, {"o", "r"}, {"▁w", "or"}, {"l", "d"}, {"▁wor", "ld"}, {"▁", "▁"}}
	for _, m := range merges {
		if _, ok := vocab[m[0]+m[1]]; !ok {
			vocab[m[0]+m[1]] = next
			next++
		}
	}
	special := func(id int, s string) map[string]any {
		return map[string]any{"id": id, "content": s, "special": true, "normalized": false, "lstrip": false, "rstrip": false, "single_word": false}
	}
	m := map[string]any{
		"version":      "1.0",
		"added_tokens": []any{special(0, "<pad>"), special(1, "<eos>"), special(2, "<bos>"), special(3, "<unk>")},
		"normalizer":   map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		"pre_tokenizer": map[string]any{"type": "Split", "pattern": map[string]any{"String": " "},
			"behavior": "MergedWithPrevious", "invert": false},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<bos>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"special_tokens": map[string]any{"<bos>": map[string]any{"id": "<bos>", "ids": []int{2}, "tokens": []string{"<bos>"}}}},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"}}},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": "<unk>", "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
			"vocab": vocab, "merges": merges},
	}
	if mutate != nil {
		mutate(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func synthSP(tb testing.TB, mutate func(m map[string]any)) *Tokenizer {
	tb.Helper()
	tk, err := LoadJSON(synthSPTokenizer(tb, mutate), []byte(`{"bos_token": "<bos>", "eos_token": "<eos>"}`))
	if err != nil {
		tb.Fatal(err)
	}
	return tk
}

// TestSyntheticSentencePiece: characters are the symbols, spaces become "▁", a character outside
// the vocab falls back to its bytes, and decoding restores spaces and bytes.
func TestSyntheticSentencePiece(t *testing.T) {
	tk := synthSP(t, nil)
	cases := []struct{ in, want string }{
		{"hello world", "hello ▁world"},
		{"  hello", "▁▁ hello"},
		{"中é", "中 <0xC3> <0xA9>"}, // é is not in the vocab: its two UTF-8 bytes
		{"a<bos>b", "<0x61> <bos> <0x62>"},
		{"", ""},
	}
	for _, c := range cases {
		ids := tk.Encode(c.in)
		if got := pieces(tk, ids); got != c.want {
			t.Errorf("Encode(%q) = %q, want %q", c.in, got, c.want)
		}
		if d := tk.Decode(ids); d != c.in {
			t.Errorf("Decode(Encode(%q)) = %q", c.in, d)
		}
	}
	if got := tk.EncodeWithSpecials("hello", EncodeOptions{AddSpecialTokens: true}); len(got) != 2 || got[0] != 2 {
		t.Errorf("post-processor <bos> missing: %v", got)
	}
	in := tk.Info()
	if in.Normalizer != "Replace" || in.PreTokenizer != "none" || in.Decoder != "Replace+ByteFallback+Fuse" || !in.ByteFallback || in.FormatVersion != 2 {
		t.Errorf("Info = %+v", in)
	}
	meta, _ := tk.TokenID("▁")
	if string(tk.TokenBytes(meta)) != " " || string(tk.TokenBytes(int(tk.t.byteIDs[0xC3]))) != "\xc3" {
		t.Errorf("TokenBytes(▁) = %q", tk.TokenBytes(meta))
	}
	if s, ok := tk.Token(meta); !ok || s != "▁" {
		t.Errorf("Token(%d) = %q", meta, s)
	}
}

// TestByteFallbackDecodeRule pins HF's ByteFallback decoder: a run of byte tokens that is not
// valid UTF-8 as a whole becomes one U+FFFD per token, even its valid part; the run ends at any
// other token; u8::from_str_radix accepts "<0x+A>" as the byte 0x0A.
func TestByteFallbackDecodeRule(t *testing.T) {
	tk := synthSP(t, nil)
	b := func(c byte) int { return int(tk.t.byteIDs[c]) }
	h, _ := tk.TokenID("h")
	plusA, _ := tk.TokenID("<0x+A>")
	cases := []struct {
		ids  []int
		want string
	}{
		{[]int{b(0xE4), b(0xB8), b(0xAD)}, "中"},
		{[]int{b('A'), b(0xFF)}, "\uFFFD\uFFFD"},
		{[]int{b(0xE4), b(0xB8), b(0xAD), b(0xE4)}, "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{[]int{b(0xE4), h, b(0xB8)}, "\uFFFDh\uFFFD"},
		{[]int{b(0xE4), b(0xB8), 2, b(0xAD)}, "\uFFFD\uFFFD<bos>\uFFFD"},
		{[]int{plusA, b('x')}, "\nx"},
	}
	for _, c := range cases {
		if got := tk.Decode(c.ids); got != c.want {
			t.Errorf("Decode(%v) = %q, want %q", c.ids, got, c.want)
		}
		// Skipping <bos> (special) joins the byte runs around it, as in HF.
		if got, want := tk.DecodeWith(c.ids, DecodeOptions{SkipSpecialTokens: true}), tk.Decode(withoutID(c.ids, 2)); got != want {
			t.Errorf("DecodeWith skip %v = %q, want %q", c.ids, got, want)
		}
		checkStream(t, tk, c.ids)
	}
}

func withoutID(ids []int, drop int) []int {
	return slices.DeleteFunc(slices.Clone(ids), func(id int) bool { return id == drop })
}

// checkStream feeds ids one by one: the pieces must concatenate to Decode's text.
func checkStream(t *testing.T, tk *Tokenizer, ids []int) {
	t.Helper()
	for _, opts := range []DecodeOptions{{}, {SkipSpecialTokens: true}} {
		d := tk.NewStreamDecoder(opts)
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(d.Add(id))
		}
		b.WriteString(d.Flush())
		if want := tk.DecodeWith(ids, opts); b.String() != want {
			t.Errorf("stream of %v (%+v) = %q, Decode = %q", ids, opts, b.String(), want)
		}
	}
}

// TestGemma3Tokenizer checks the real Gemma 3 tables beyond the golden file: <bos> from the
// post-processor, Info, streaming decode and the special ids.
func TestGemma3Tokenizer(t *testing.T) {
	tk := family(t, "gemma3")
	if got := tk.EncodeWithSpecials("Hello world", EncodeOptions{AddSpecialTokens: true}); !slices.Equal(got, []int{2, 9259, 1902}) {
		t.Errorf("with <bos>: %v", got)
	}
	in := tk.Info()
	if in.VocabSize != 262145 || in.ModelVocabSize != 262144 || in.Merges != 514906 || in.BOS == nil || in.BOS.ID != 2 || in.EOS == nil || in.EOS.Text != "<end_of_turn>" ||
		in.PreTokenizer != "none" || !in.ByteFallback || in.PostProcessor != "TemplateProcessing" {
		t.Errorf("Info = %+v", in)
	}
	for _, r := range readJSONL[tokRecord](t, "tokenizer-gemma3-public.jsonl") {
		checkStream(t, tk, r.IDs)
	}
	// An emoji outside the vocab arrives as byte tokens: the stream shows it only when complete.
	d := tk.NewStreamDecoder(DecodeOptions{})
	var parts []string
	for _, id := range tk.Encode("a\U0001F9FF b") {
		parts = append(parts, d.Add(id))
	}
	parts = append(parts, d.Flush())
	if strings.Join(parts, "") != "a\U0001F9FF b" || slices.ContainsFunc(parts, func(p string) bool { return strings.ContainsRune(p, '\uFFFD') }) {
		t.Errorf("stream pieces %q", parts)
	}
}

// TestSentencePieceCompileErrors: incomplete or mixed pipelines are refused, naming the field.
func TestSentencePieceCompileErrors(t *testing.T) {
	model := func(m map[string]any) map[string]any { return m["model"].(map[string]any) }
	cases := []struct {
		name   string
		mutate func(m map[string]any)
		want   string
	}{
		{"missing byte token", func(m map[string]any) { delete(model(m)["vocab"].(map[string]any), "<0x7F>") },
			"tokenizer.json: model.vocab: byte_fallback is true but the byte token <0x7F> is missing; all 256 of <0x00>..<0xFF> are required"},
		{"no byte_fallback", func(m map[string]any) { model(m)["byte_fallback"] = false },
			"tokenizer.json: model.byte_fallback: false with the decoder Sequence[Replace, ByteFallback, Fuse] is not supported"},
		{"Strip decoder", func(m map[string]any) {
			dec := m["decoder"].(map[string]any)
			dec["decoders"] = append(dec["decoders"].([]any), map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0})
		}, "tokenizer.json: decoder.decoders: [Replace, ByteFallback, Fuse, Strip] is not supported"},
		{"ByteLevel decoder", func(m map[string]any) { m["decoder"] = map[string]any{"type": "ByteLevel"} },
			"tokenizer.json: decoder: byte_fallback BPE needs the decoder Sequence"},
		{"other Replace", func(m map[string]any) { m["normalizer"].(map[string]any)["content"] = "_" },
			`tokenizer.json: normalizer: Replace {"String":" "} -> "_" is not supported`},
		{"Split without normalizer", func(m map[string]any) { m["normalizer"] = nil },
			`tokenizer.json: pre_tokenizer: a Split on " " is only supported after the normalizer Replace " " -> "▁"`},
		{"Prepend", func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "Prepend", "prepend": "▁"}}}
		}, `tokenizer.json: normalizer.normalizers[0].type: "Prepend" is not supported`},
		{"bad merge", func(m map[string]any) { model(m)["merges"] = [][2]string{{"h", "q"}} },
			`tokenizer.json: model.merges[0]: "q" is not in the vocab`},
	}
	for _, c := range cases {
		_, _, err := Compile(synthSPTokenizer(t, c.mutate), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
	// A byte-level model cannot take the "▁" normalizer.
	_, _, err := Compile(synthTokenizer(t, func(m map[string]any) {
		m["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}
	}), nil)
	if err == nil || !strings.Contains(err.Error(), `tokenizer.json: normalizer: Replace " " -> "▁" is only supported for a BPE model with byte_fallback`) {
		t.Errorf("byte-level with ▁ normalizer: %v", err)
	}
}
