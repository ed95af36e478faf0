package tokenizer

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/anepack/anepack/internal/testtok"
)

// gpt2SlowFiles returns what HF's GPT2Tokenizer.save_vocabulary writes for the golden
// tokenizer.json: vocab.json and merges.txt.
func gpt2SlowFiles(t *testing.T) (vocabJSON, mergesTXT []byte) {
	t.Helper()
	tokJSON, _, _ := familyFiles(t, "gpt2")
	vocabJSON, mergesTXT, err := testtok.Split(tokJSON)
	if err != nil {
		t.Fatal(err)
	}
	return vocabJSON, mergesTXT
}

// TestGPT2FromVocabMerges: vocab.json + merges.txt (+ tokenizer_config.json) compile to exactly
// the tables of GPT-2's tokenizer.json, and encode the 519 golden texts identically.
func TestGPT2FromVocabMerges(t *testing.T) {
	_, cfg, wantBlob := familyFiles(t, "gpt2")
	vocab, merges := gpt2SlowFiles(t)
	tokJSON, cfgJSON, err := TokenizerJSONFromVocabMerges(VocabMergesFiles{VocabJSON: vocab, MergesTXT: merges, TokenizerConfigJSON: cfg})
	if err != nil {
		t.Fatal(err)
	}
	blob, _, err := Compile(tokJSON, cfgJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(blob, wantBlob) {
		t.Errorf("tables differ from tokenizer.json's (%d vs %d bytes)", len(blob), len(wantBlob))
	}
	tk, err := Load(blob)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, tk, "tokenizer-gpt2-public.jsonl", 519)

	// Without tokenizer_config.json, GPT2Tokenizer's defaults give the same special tokens.
	tokJSON, cfgJSON, err = TokenizerJSONFromVocabMerges(VocabMergesFiles{VocabJSON: vocab, MergesTXT: merges})
	if err != nil {
		t.Fatal(err)
	}
	tk2, err := LoadJSON(tokJSON, cfgJSON)
	if err != nil {
		t.Fatal(err)
	}
	if tk2.EOS() != 50256 || tk2.BOS() != 50256 || !tk2.IsSpecial(50256) || !slices.Equal(tk2.Encode("Hello world<|endoftext|>"), []int{15496, 995, 50256}) {
		t.Errorf("defaults: eos %d bos %d, ids %v", tk2.EOS(), tk2.BOS(), tk2.Encode("Hello world<|endoftext|>"))
	}
}

// TestVocabMergesOptions: special_tokens_map.json, add_bos_token and added_tokens_decoder.
func TestVocabMergesOptions(t *testing.T) {
	vocab, merges := gpt2SlowFiles(t)
	cfg := `{"add_bos_token": true, "added_tokens_decoder": {"50257": {"content": "<pad>", "special": true, "normalized": false}}}`
	stm := `{"pad_token": "<pad>", "eos_token": {"content": "<|endoftext|>", "lstrip": false}}`
	tokJSON, cfgJSON, err := TokenizerJSONFromVocabMerges(VocabMergesFiles{VocabJSON: vocab, MergesTXT: merges, TokenizerConfigJSON: []byte(cfg), SpecialTokensMapJSON: []byte(stm)})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := LoadJSON(tokJSON, cfgJSON)
	if err != nil {
		t.Fatal(err)
	}
	if tk.PAD() != 50257 || tk.VocabSize() != 50258 || !tk.IsSpecial(50257) {
		t.Errorf("pad %d, vocab %d", tk.PAD(), tk.VocabSize())
	}
	if got := tk.EncodeWithSpecials("Hello<pad>", EncodeOptions{AddSpecialTokens: true}); !slices.Equal(got, []int{50256, 15496, 50257}) {
		t.Errorf("add_bos_token encode = %v", got)
	}
}

// TestVocabMergesErrors: bad files are refused with the file, the line or field, and what was
// expected.
func TestVocabMergesErrors(t *testing.T) {
	vocab, merges := gpt2SlowFiles(t)
	cases := []struct {
		name               string
		vocab, merges, cfg string
		want               string
	}{
		{"vocab not object", "[1]", string(merges), "", "vocab.json: expected a JSON object mapping tokens to ids"},
		{"vocab bad id", `{"a": -1}`, string(merges), "", `vocab.json: the id of "a" is -1; expected an integer`},
		{"merge three parts", string(vocab), "#version: 0.2\nĠ t x\n", "", `merges.txt: line 2: "Ġ t x" is not two tokens separated by one space`},
		{"merge unknown", string(vocab), "#version: 0.2\nĠ t\nzzz q\n", "", `merges.txt: line 3: "zzz" is not in vocab.json`},
		{"no merges", string(vocab), "#version: 0.2\n", "", "merges.txt: no merges"},
		{"roberta", string(vocab), string(merges), `{"tokenizer_class": "RobertaTokenizer"}`, `tokenizer_config.json: tokenizer_class: "RobertaTokenizer" without tokenizer.json is not supported`},
		{"prefix space", string(vocab), string(merges), `{"add_prefix_space": true}`, "tokenizer_config.json: add_prefix_space: true is not supported"},
		{"decoder id", string(vocab), string(merges), `{"added_tokens_decoder": {"60000": {"content": "<x>"}}}`, `tokenizer_config.json: added_tokens_decoder.60000: "<x>" would get id 50257`},
	}
	for _, c := range cases {
		_, _, err := TokenizerJSONFromVocabMerges(VocabMergesFiles{VocabJSON: []byte(c.vocab), MergesTXT: []byte(c.merges), TokenizerConfigJSON: []byte(c.cfg)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// TestCompileVocabMergesNamesFiles: problems found while compiling name vocab.json.
func TestCompileVocabMergesNamesFiles(t *testing.T) {
	_, merges := gpt2SlowFiles(t)
	_, _, err := CompileVocabMerges(VocabMergesFiles{VocabJSON: []byte(`{"a": 0, "b": 0}`), MergesTXT: merges}, CompileOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "merges.txt: line 2:") {
		t.Errorf("unknown merge: %v", err)
	}
	_, _, err = CompileVocabMerges(VocabMergesFiles{VocabJSON: []byte(`{"a": 0, "b": 0}`), MergesTXT: []byte("a b\n")}, CompileOptions{})
	if err == nil || !strings.Contains(err.Error(), "merges.txt: line 1:") {
		t.Errorf("merge result missing: %v", err)
	}
	_, _, err = CompileVocabMerges(VocabMergesFiles{VocabJSON: []byte(`{"a": 0, "b": 0, "ab": 1}`), MergesTXT: []byte("a b\n")}, CompileOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "vocab.json: id 0 used by both") {
		t.Errorf("duplicate id: %v", err)
	}
	_, _, err = CompileVocabMerges(VocabMergesFiles{VocabJSON: []byte(`{"a": 0, "b": 1, "ab": 2}`), MergesTXT: []byte("a b\n")}, CompileOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "vocab.json: lacks the byte-level symbol") {
		t.Errorf("incomplete alphabet: %v", err)
	}
}
