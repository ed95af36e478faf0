package tokenizer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// synthTokenizer builds a small byte-level BPE tokenizer.json: the 256 byte symbols, a few
// merges, and added tokens with every flag. mutate may edit the decoded JSON before encoding.
func synthTokenizer(tb testing.TB, mutate func(m map[string]any)) []byte {
	tb.Helper()
	vocab := map[string]any{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	merges := [][2]string{{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}, {"o", "r"}, {"Ġw", "or"}, {"Ġwor", "ld"}, {"l", "d"}, {"1", "2"}}
	next := 256
	for _, m := range merges {
		if _, ok := vocab[m[0]+m[1]]; !ok {
			vocab[m[0]+m[1]] = next
			next++
		}
	}
	vocab["Ġworldwide"] = next // reachable only with ignore_merges
	next++
	added := []map[string]any{
		{"id": next, "content": "<|end|>", "special": true, "normalized": false, "lstrip": false, "rstrip": false, "single_word": false},
		{"id": next + 1, "content": "<L>", "special": false, "normalized": false, "lstrip": true, "rstrip": false, "single_word": false},
		{"id": next + 2, "content": "<R>", "special": false, "normalized": false, "lstrip": false, "rstrip": true, "single_word": false},
		{"id": next + 3, "content": "word", "special": false, "normalized": false, "lstrip": false, "rstrip": false, "single_word": true},
		{"id": next + 4, "content": "café", "special": false, "normalized": true, "lstrip": false, "rstrip": false, "single_word": false},
	}
	m := map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": added,
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": patternQwen2}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
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

const synthConfig = `{"bos_token": null, "eos_token": "<|end|>", "pad_token": {"content": "<|end|>"},
 "additional_special_tokens": ["<|end|>"],
 "chat_template": "{% for m in messages %}{{ m.role }}: {{ m.content }}<|end|>{% endfor %}{{ eos_token }}"}`

func synth(tb testing.TB, mutate func(m map[string]any)) *Tokenizer {
	tb.Helper()
	tk, err := LoadJSON(synthTokenizer(tb, mutate), []byte(synthConfig))
	if err != nil {
		tb.Fatal(err)
	}
	return tk
}

func pieces(tk *Tokenizer, ids []int) string {
	var parts []string
	for _, id := range ids {
		s, _ := tk.Token(id)
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestSyntheticAddedTokenFlags(t *testing.T) {
	tk := synth(t, nil)
	cases := []struct{ in, want string }{
		{"hello world", "hello Ġworld"},
		{"hello<|end|>hello", "hello <|end|> hello"},
		{"a   <L>b", "a <L> b"},           // lstrip swallows the spaces before <L>
		{"a<R>   b", "a <R> b"},           // rstrip swallows the spaces after <R>
		{"a word b", "a Ġ word Ġ b"},      // single_word matches between spaces
		{"swordfish", "s w or d f i s h"}, // ... but not inside a word
		{"café", "café"},                  // normalized token
		{"cafe\u0301", "café"},            // matched after NFC
		{"12 123", "12 Ġ 1 2 3"},          // Qwen2 splits digits one by one: "1","2" merge only inside a piece
	}
	for _, c := range cases {
		got := pieces(tk, tk.Encode(c.in))
		if c.in == "12 123" {
			// \p{N} pieces are single digits, so "12" never merges.
			c.want = "1 2 Ġ 1 2 3"
		}
		if got != c.want {
			t.Errorf("Encode(%q) = %q, want %q", c.in, got, c.want)
		}
		if d := tk.Decode(tk.Encode(c.in)); !strings.Contains(c.in, "caf") && !strings.Contains(c.in, "<L>") && !strings.Contains(c.in, "<R>") && d != c.in {
			t.Errorf("Decode(Encode(%q)) = %q", c.in, d)
		}
	}
	// HF's ByteLevel decoder maps every character of an added token that lies in the byte
	// alphabet to its byte: "é" (U+00E9) becomes the lone byte 0xE9, which is not UTF-8.
	if d := tk.Decode(tk.Encode("café")); d != "caf\ufffd" {
		t.Errorf("Decode of the added token café = %q, want HF's %q", d, "caf\ufffd")
	}
}

func TestSyntheticLlama3Features(t *testing.T) {
	tk := synth(t, func(m map[string]any) {
		pre := m["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)
		pre[0].(map[string]any)["pattern"] = map[string]any{"Regex": patternLlama3}
		m["model"].(map[string]any)["ignore_merges"] = true
		m["normalizer"] = nil
		m["post_processor"] = map[string]any{"type": "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": "<|end|>", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"pair":           []any{},
			"special_tokens": map[string]any{"<|end|>": map[string]any{"id": "<|end|>", "ids": []int{267}, "tokens": []string{"<|end|>"}}}}
	})
	if got := pieces(tk, tk.Encode("12 123 worldwide")); got != "12 Ġ 12 3 Ġworldwide" {
		// \p{N}{1,3} keeps "123" together; ignore_merges takes " worldwide" whole from the vocab.
		t.Errorf("llama3 split = %q", got)
	}
	if got := pieces(tk, tk.Encode(" worldwide")); got != "Ġworldwide" {
		t.Errorf("ignore_merges lookup = %q", got)
	}
	endID, _ := tk.TokenID("<|end|>")
	if endID != 267 {
		t.Fatalf("<|end|> id %d, test assumes 267", endID)
	}
	got := tk.EncodeWithSpecials("hello", EncodeOptions{AddSpecialTokens: true})
	if !slices.Equal(got[:1], []int{endID}) || len(got) != 2 {
		t.Errorf("TemplateProcessing prefix missing: %v", got)
	}
	if tk.Info().PostProcessor != "TemplateProcessing" || tk.Info().PreTokenizer != "llama3" || tk.Info().Normalizer != "none" {
		t.Errorf("Info = %+v", tk.Info())
	}
}

func TestSyntheticGPT2(t *testing.T) {
	tk := synth(t, func(m map[string]any) {
		m["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	})
	if got := pieces(tk, tk.Encode("hello world's")); got != "hello Ġworld ' s" {
		t.Errorf("gpt2 = %q", got)
	}
}

// TestUnsupportedTokenizers: each unsupported construct is refused with an error that names the
// file, the field and the value.
func TestUnsupportedTokenizers(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(m map[string]any)
		want   string
	}{
		{"Unigram", func(m map[string]any) {
			m["model"] = map[string]any{"type": "Unigram", "unk_id": 0, "vocab": [][]any{{"a", -1.0}}}
		}, `tokenizer.json: model.type: "Unigram" is not supported (only BPE)`},
		{"WordPiece", func(m map[string]any) {
			m["model"] = map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "vocab": map[string]int{"[UNK]": 0}}
		}, `tokenizer.json: model.type: "WordPiece" is not supported (only BPE)`},
		{"WordLevel", func(m map[string]any) {
			m["model"] = map[string]any{"type": "WordLevel", "vocab": map[string]int{"a": 0}}
		}, `model.type: "WordLevel" is not supported`},
		{"NFKC", func(m map[string]any) { m["normalizer"] = map[string]any{"type": "NFKC"} },
			`tokenizer.json: normalizer.type: "NFKC" is not supported`},
		{"Metaspace", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "▁"}
		}, `tokenizer.json: pre_tokenizer.type: "Metaspace" is not supported`},
		{"other regex", func(m map[string]any) {
			pre := m["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)
			pre[0].(map[string]any)["pattern"] = map[string]any{"Regex": `\w+`}
		}, `pre_tokenizer.pretokenizers[0].pattern.Regex: "\\w+" is not a supported pattern`},
		{"decoder", func(m map[string]any) { m["decoder"] = map[string]any{"type": "WordPiece"} },
			`tokenizer.json: decoder.type: "WordPiece" is not supported (only ByteLevel, or Sequence[Replace, ByteFallback, Fuse])`},
		{"dropout", func(m map[string]any) { m["model"].(map[string]any)["dropout"] = 0.1 },
			`tokenizer.json: model.dropout: 0.1 is not supported`},
		{"suffix", func(m map[string]any) { m["model"].(map[string]any)["end_of_word_suffix"] = "</w>" },
			`model.end_of_word_suffix: "</w>" is not supported`},
		{"missing byte", func(m map[string]any) {
			delete(m["model"].(map[string]any)["vocab"].(map[string]any), "Ġ")
		}, `tokenizer.json: model.vocab: lacks the byte-level symbol "Ġ" for byte 0x20`},
		{"bad merge", func(m map[string]any) {
			mm := m["model"].(map[string]any)
			mm["merges"] = append(mm["merges"].([][2]string), [2]string{"x", "qq"})
		}, `tokenizer.json: model.merges[10]: "qq" is not in the vocab`},
		{"Bert post", func(m map[string]any) { m["post_processor"] = map[string]any{"type": "BertProcessing"} },
			`post_processor[0].type: "BertProcessing" is not supported`},
		{"version", func(m map[string]any) { m["version"] = "2.0" }, `tokenizer.json: version: "2.0" is not supported`},
		{"sparse ids", func(m map[string]any) { m["model"].(map[string]any)["vocab"].(map[string]any)["zzz"] = 1 << 29 },
			`tokenizer.json: model.vocab: ids are too sparse`},
		{"duplicate id", func(m map[string]any) { m["model"].(map[string]any)["vocab"].(map[string]any)["zzz"] = 0 },
			`model.vocab: id 0 used by both`},
	}
	for _, c := range cases {
		_, _, err := Compile(synthTokenizer(t, c.mutate), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
	if _, _, err := Compile([]byte("not json"), nil); err == nil || !strings.HasPrefix(err.Error(), "tokenizer.json: not a JSON object") {
		t.Errorf("garbage: %v", err)
	}
	if _, _, err := Compile(synthTokenizer(t, nil), []byte(`{"chat_template": 7}`)); err == nil ||
		!strings.Contains(err.Error(), "tokenizer_config.json: chat_template:") {
		t.Errorf("bad config: %v", err)
	}
}

func TestSyntheticInfoAndConfig(t *testing.T) {
	tk := synth(t, nil)
	in := tk.Info()
	if in.EOS == nil || in.EOS.Text != "<|end|>" || in.PAD == nil || in.PAD.ID != in.EOS.ID || in.BOS != nil {
		t.Fatalf("Info = %+v", in)
	}
	if fmt.Sprint(in.ChatTemplates) != "[default]" || !in.HasChatTemplate {
		t.Fatalf("templates = %v", in.ChatTemplates)
	}
}
