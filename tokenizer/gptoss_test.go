package tokenizer

import (
	"slices"
	"testing"
)

// harmonySpecials are the control tokens of gpt-oss's harmony format and their ids in
// o200k_harmony.
var harmonySpecials = []struct {
	text string
	id   int
}{
	{"<|startoftext|>", 199998}, {"<|endoftext|>", 199999}, {"<|return|>", 200002},
	{"<|constrain|>", 200003}, {"<|channel|>", 200005}, {"<|start|>", 200006},
	{"<|end|>", 200007}, {"<|message|>", 200008}, {"<|call|>", 200012}, {"<|endofprompt|>", 200018},
}

// TestGptOssHarmonySpecials: every harmony control token is one id wherever it occurs in a
// rendered conversation, the text between them encodes as it does on its own, decoding gives the
// text back, and SplitSpecialTokens turns them into plain text.
func TestGptOssHarmonySpecials(t *testing.T) {
	tk := family(t, "gptoss")
	for _, s := range harmonySpecials {
		if id, ok := tk.TokenID(s.text); !ok || id != s.id {
			t.Errorf("TokenID(%q) = %d, %v; want %d", s.text, id, ok, s.id)
		}
		if got := tk.Encode("x" + s.text + "y"); !slices.Equal(got, []int{87, s.id, 88}) {
			t.Errorf("Encode(x%sy) = %v", s.text, got)
		}
	}
	// "system" and "assistant" are single tokens (tokenizer-gptoss-public.jsonl has both).
	parts := []any{
		"<|start|>", "system", "<|message|>", "You are ChatGPT, a large language model.\nReasoning: high", "<|end|>",
		"<|start|>", "user", "<|message|>", "What is 2+2?", "<|end|>",
		"<|start|>", "assistant", "<|channel|>", "analysis", "<|message|>", "Simple arithmetic.", "<|end|>",
		"<|start|>", "assistant", "<|channel|>", "commentary to=functions.get_weather ", "<|constrain|>", "json",
		"<|message|>", `{"city":"Paris"}`, "<|call|>",
		"<|start|>", "assistant", "<|channel|>", "final", "<|message|>", "4", "<|return|>",
	}
	var text string
	var want []int
	for _, p := range parts {
		s := p.(string)
		text += s
		if id, ok := tk.TokenID(s); ok && len(s) > 2 && s[:2] == "<|" {
			want = append(want, id)
			continue
		}
		want = append(want, tk.Encode(s)...)
	}
	got := tk.Encode(text)
	if !slices.Equal(got, want) {
		t.Fatalf("Encode(harmony conversation):\n got  %v\n want %v", got, want)
	}
	if !slices.Contains(got, 17360) || !slices.Contains(got, 173781) {
		t.Errorf("ids %v lack system (17360) or assistant (173781)", got)
	}
	if d := tk.Decode(got); d != text {
		t.Errorf("Decode = %q", d)
	}
	split := tk.EncodeWithSpecials("<|start|>user", EncodeOptions{SplitSpecialTokens: true})
	if slices.Contains(split, 200006) || tk.Decode(split) != "<|start|>user" {
		t.Errorf("SplitSpecialTokens: %v", split)
	}
	in := tk.Info()
	if in.PreTokenizer != "o200k" || in.Normalizer != "none" || !in.IgnoreMerges || in.VocabSize != 200019 ||
		in.ModelVocabSize != 199998 || tk.BOS() != 199998 || tk.EOS() != 200002 || tk.PAD() != 199999 || in.BuiltinChatTemplate != "harmony" {
		t.Errorf("Info = %+v", in)
	}
}

// TestO200kCaseRuns pins how the o200k pattern splits on letter case, which no earlier pattern
// did: an upper-case run joins the lower-case run after it ("JSONParser"), a contraction stays
// with its word, and a punctuation run keeps the slashes after it.
func TestO200kCaseRuns(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"CamelCaseJSONParser", []string{"Camel", "Case", "JSONParser"}},
		{"HELLO world", []string{"HELLO", " world"}},
		{"DON'T you'll", []string{"DON'T", " you'll"}},
		{"x!\n/y", []string{"x", "!\n/", "y"}},
		{"12345", []string{"123", "45"}},
	} {
		if got := scannerSplit(preO200k, c.in); !slices.Equal(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}
