package tokenizer

import (
	"slices"
	"testing"
)

// TestLlama3BOS: plain Encode is HF's add_special_tokens=False (no BOS); AddSpecialTokens applies
// the TemplateProcessing post-processor (one <|begin_of_text|>); a rendered chat prompt already
// starts with the BOS its template writes, and encoding it adds no second one.
func TestLlama3BOS(t *testing.T) {
	tk := family(t, "llama3")
	const bos = 128000
	if got := tk.Encode("Hello"); !slices.Equal(got, []int{9906}) {
		t.Errorf("Encode = %v", got)
	}
	if got := tk.EncodeWithSpecials("Hello", EncodeOptions{AddSpecialTokens: true}); !slices.Equal(got, []int{bos, 9906}) {
		t.Errorf("with the post-processor = %v", got)
	}
	text, err := tk.ApplyChatTemplate([]Message{{Role: "user", Content: "Hello"}}, ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := tk.Encode(text)
	if ids[0] != bos || slices.Contains(ids[1:], bos) {
		t.Errorf("chat prompt ids %v: want exactly one leading BOS", ids)
	}
	in := tk.Info()
	if in.PreTokenizer != "llama3" || in.Normalizer != "none" || in.PostProcessor != "TemplateProcessing" || !in.IgnoreMerges ||
		in.BOS == nil || in.BOS.ID != bos || tk.BOS() != bos || in.VocabSize != 128256 {
		t.Errorf("Info = %+v", in)
	}
}
