package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/anepack/anepack/bench/internal/gguf"
	"github.com/anepack/anepack/internal/testtok"
	"github.com/anepack/anepack/tokenizer"
)

// rawFields decodes a JSON object into its fields.
func rawFields(t *testing.T, s string) map[string]json.RawMessage {
	t.Helper()
	if s == "" {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSpecials reads special token ids and add_*_token switches from the three places
// llama.cpp's converter looks, in its order of precedence.
func TestSpecials(t *testing.T) {
	added := `[{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "</s>", "special": true},
		{"id": 2, "content": "<pad>", "special": true}, {"id": 3, "content": "<eot>", "special": true}]`
	llamaPost := `{"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "TemplateProcessing",
		"single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}],
		"pair": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}, {"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "B"}}]}]}`
	cases := []struct {
		name, post, tcfg, config string
		ids                      map[string]uint32
		add                      map[string]bool
		err                      string
	}{
		{name: "tokenizer_config first, then config.json",
			tcfg:   `{"bos_token": null, "eos_token": "</s>", "pad_token": {"content": "<pad>"}, "add_bos_token": false}`,
			config: `{"bos_token_id": 0, "eos_token_id": 3, "pad_token_id": [2], "unk_token_id": 3}`,
			ids:    map[string]uint32{"bos": 0, "eos": 1, "pad": 2, "unk": 3},
			add:    map[string]bool{"bos": false}},
		{name: "a prepended BOS", post: llamaPost, tcfg: `{"bos_token": "<s>", "eos_token": "<eot>"}`,
			ids: map[string]uint32{"bos": 0, "eos": 3},
			add: map[string]bool{"bos": true, "sep": false}},
		{name: "tokenizer_config's switch wins", post: llamaPost, tcfg: `{"bos_token": "<s>", "add_bos_token": false}`,
			ids: map[string]uint32{"bos": 0},
			add: map[string]bool{"bos": false, "sep": false}},
		{name: "no tokenizer_config", post: llamaPost, config: `{"eos_token_id": 1}`,
			ids: map[string]uint32{"eos": 1},
			add: map[string]bool{"bos": true, "sep": false}},
		{name: "a separator", tcfg: `{"bos_token": "<s>", "eos_token": "</s>"}`,
			post: `{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}],
				"pair": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}, {"SpecialToken": {"id": "</s>"}}, {"Sequence": {"id": "B"}}]}`,
			ids: map[string]uint32{"bos": 0, "eos": 1, "sep": 1},
			add: map[string]bool{"bos": true, "sep": true}},
		{name: "a leading token that is neither bos_token nor cls_token", post: llamaPost, tcfg: `{"eos_token": "</s>"}`,
			ids: map[string]uint32{"bos": 0, "cls": 0, "eos": 1}, // (llama.cpp has no key for cls)
			add: map[string]bool{"bos": true, "sep": false}},
		{name: "an appended token that is not eos_token", tcfg: `{"eos_token": "</s>"}`,
			post: `{"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A"}}, {"SpecialToken": {"id": "<eot>"}}]}`,
			err:  `tokenizer.json: field "post_processor": the template ends with "<eot>", not eos_token "</s>"`},
		{name: "an id outside the vocabulary", config: `{"bos_token_id": 4}`,
			err: "bos token id 4 is outside the vocabulary (4 tokens)"},
	}
	for _, c := range cases {
		var tf tokenizerFile
		if err := json.Unmarshal([]byte(`{"added_tokens": `+added+`}`), &tf); err != nil {
			t.Fatal(err)
		}
		if c.post != "" {
			tf.PostProcessor = json.RawMessage(c.post)
		}
		v := &vocab{ids: map[string]uint32{}, add: map[string]bool{}, tokens: make([]string, 4)}
		err := v.readSpecials(tf, rawFields(t, c.tcfg), rawFields(t, c.config), "tokenizer_config.json")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v; want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(v.ids, c.ids) || !reflect.DeepEqual(v.add, c.add) {
			t.Errorf("%s: ids %v add %v; want %v %v", c.name, v.ids, v.add, c.ids, c.add)
		}
	}
}

// TestLlamaRules checks what the converter writes for llama alone: add_prefix_space when
// tokenizer_config.json has it, and no BOS for a vocabulary of 49152.
func TestLlamaRules(t *testing.T) {
	v := &vocab{add: map[string]bool{"bos": true}}
	v.llamaRules(rawFields(t, `{"add_prefix_space": false}`), 49152)
	var got []string
	for _, kv := range v.kvs() {
		if b, ok := kv.Value.Interface().(bool); ok {
			got = append(got, kv.Key+"="+strconv.FormatBool(b))
		}
	}
	want := []string{"tokenizer.ggml.add_space_prefix=false", "tokenizer.ggml.add_bos_token=false"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("switches %v; want %v", got, want)
	}
	v = &vocab{add: map[string]bool{"bos": true}}
	v.llamaRules(rawFields(t, `{"add_prefix_space": null}`), 128256)
	if v.spacePrefix != nil || !v.add["bos"] {
		t.Errorf("add_prefix_space null or a vocabulary of 128256: space prefix %v, add bos %v; want unset, true", v.spacePrefix, v.add["bos"])
	}
}

// TestMerges reads both spellings of model.merges; a space inside a part of the pair form
// becomes U+0120, as llama.cpp's converter writes it.
func TestMerges(t *testing.T) {
	got, err := readMerges(json.RawMessage(`["a b", "ab c"]`), "tokenizer.json")
	if err != nil || !reflect.DeepEqual(got, []string{"a b", "ab c"}) {
		t.Errorf("strings: %q, %v", got, err)
	}
	got, err = readMerges(json.RawMessage(`[["a", "b"], ["x y", " z"]]`), "tokenizer.json")
	if err != nil || !reflect.DeepEqual(got, []string{"a b", "x\u0120y \u0120z"}) {
		t.Errorf("pairs: %q, %v", got, err)
	}
	for in, want := range map[string]string{
		``:                  `field "model.merges": missing`,
		`[["a", "b", "c"]]`: `field "model.merges[0]": 3 parts; expected 2`,
		`{"a": 1}`:          `field "model.merges": expected`,
	} {
		if _, err := readMerges(json.RawMessage(in), "tokenizer.json"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v; want %q", in, err, want)
		}
	}
}

// TestTemplates reads the chat templates from tokenizer_config.json (a string or a named list),
// else chat_template.jinja, else chat_template.json, and writes a named list as llama.cpp's
// writer does: the default under tokenizer.chat_template, the others under their names.
func TestTemplates(t *testing.T) {
	dir := t.TempDir()
	got, err := readTemplates(dir, rawFields(t, `{"chat_template": "T"}`), "tokenizer_config.json")
	if err != nil || !reflect.DeepEqual(got, []namedTemplate{{"default", "T"}}) {
		t.Errorf("string: %v, %v", got, err)
	}
	list := `{"chat_template": [{"name": "tool use", "template": "B"}, {"name": "default", "template": "A"}, {"name": "x"}, {"name": "", "template": "C"}]}`
	got, err = readTemplates(dir, rawFields(t, list), "tokenizer_config.json")
	if err != nil || !reflect.DeepEqual(got, []namedTemplate{{"default", "A"}, {"tool_use", "B"}}) {
		t.Errorf("list: %v, %v", got, err)
	}
	v := &vocab{templates: got}
	var keys []string
	for _, kv := range v.kvs() {
		if strings.HasPrefix(kv.Key, "tokenizer.chat_template") {
			keys = append(keys, kv.Key+"="+strings.Join(valueStrings(kv.Value), ","))
		}
	}
	want := []string{"tokenizer.chat_template=A", "tokenizer.chat_template.tool_use=B", "tokenizer.chat_templates=tool_use"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %v; want %v", keys, want)
	}
	if got, err := readTemplates(dir, rawFields(t, `{}`), "tokenizer_config.json"); err != nil || got != nil {
		t.Errorf("none: %v, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.json"), []byte(`{"chat_template": "J"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := readTemplates(dir, rawFields(t, `{}`), "tokenizer_config.json"); err != nil || !reflect.DeepEqual(got, []namedTemplate{{"default", "J"}}) {
		t.Errorf("chat_template.json: %v, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte("K"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := readTemplates(dir, rawFields(t, `{}`), "tokenizer_config.json"); err != nil || !reflect.DeepEqual(got, []namedTemplate{{"default", "K"}}) {
		t.Errorf("chat_template.jinja: %v, %v", got, err)
	}
	if got, err := readTemplates(dir, rawFields(t, `{"chat_template": "T"}`), "tokenizer_config.json"); err != nil || got[0].text != "T" {
		t.Errorf("tokenizer_config.json before the files: %v, %v", got, err)
	}
	if got, err := readTemplates(dir, nil, ""); err != nil || got != nil {
		t.Errorf("no tokenizer_config.json: %v, %v", got, err)
	}
	if _, err := readTemplates(dir, rawFields(t, `{"chat_template": 3}`), "tokenizer_config.json"); err == nil || !strings.Contains(err.Error(), `tokenizer_config.json: field "chat_template": expected a string or a list`) {
		t.Errorf("a number: %v", err)
	}
}

// valueStrings returns a string value, or the strings of an array, for comparisons.
func valueStrings(v gguf.Value) []string {
	switch x := v.Interface().(type) {
	case string:
		return []string{x}
	case []string:
		return x
	}
	return nil
}

// TestPreName names the GPT-2 tokenizer's pre-tokenizer "gpt-2" by its check hash, and refuses
// a tokenizer llama.cpp would not recognise (Gemma 3's), naming the file and the hash.
func TestPreName(t *testing.T) {
	for fam, want := range map[string]string{"gpt2": "gpt-2", "gemma3": ""} {
		tj, tc, err := testtok.Files(fam)
		if err != nil {
			t.Fatal(err)
		}
		tk, err := tokenizer.LoadJSON(tj, tc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := preName(tk, "x/tokenizer.json")
		switch {
		case want != "" && (err != nil || got != want):
			t.Errorf("%s: %q, %v; want %q", fam, got, err, want)
		case want == "" && (err == nil || !strings.Contains(err.Error(), "x/tokenizer.json: the pre-tokenizer is not one mkgguf can name for llama.cpp (check hash ")):
			t.Errorf("%s: %q, %v; want an error", fam, got, err)
		}
	}
}
