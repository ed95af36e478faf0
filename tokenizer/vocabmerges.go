package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Repositories saved without tokenizer.json (many GPT-2 fine-tunes) carry the files of the
// "slow" GPT2Tokenizer instead: vocab.json ({token: id}) and merges.txt ("#version: 0.2", then
// "a b" per merge, by rank). transformers builds the same tokenizers pipeline from them as the
// one openai-community/gpt2's tokenizer.json describes: BPE without dropout or affixes, the
// ByteLevel pre-tokenizer with its built-in regex, the ByteLevel decoder and post-processor (a
// <bos> TemplateProcessing when add_bos_token is set), and the special tokens of
// tokenizer_config.json / special_tokens_map.json as special added tokens, defaulting to
// GPT2Tokenizer's "<|endoftext|>" for bos, eos and unk.

// VocabMergesFiles are the files of such a repository. VocabJSON and MergesTXT are required;
// the other two may be nil.
type VocabMergesFiles struct {
	VocabJSON            []byte // vocab.json
	MergesTXT            []byte // merges.txt
	TokenizerConfigJSON  []byte // tokenizer_config.json
	SpecialTokensMapJSON []byte // special_tokens_map.json
}

// gpt2Default is GPT2Tokenizer's default bos, eos and unk token.
const gpt2Default = "<|endoftext|>"

// specialKeys are transformers' SPECIAL_TOKENS_ATTRIBUTES in order, without the list.
var specialKeys = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// TokenizerJSONFromVocabMerges returns the tokenizer.json, and the tokenizer_config.json (with
// the special tokens of special_tokens_map.json and GPT2Tokenizer's defaults filled in), that
// transformers' GPT2Tokenizer builds from vocab.json and merges.txt. Pass both to [Compile].
// Errors name the file, the line or field, and what was expected.
func TokenizerJSONFromVocabMerges(f VocabMergesFiles) (tokenizerJSON, tokenizerConfigJSON []byte, err error) {
	vocab, err := readVocabJSON(f.VocabJSON)
	if err != nil {
		return nil, nil, err
	}
	merges, err := readMergesTXT(f.MergesTXT, vocab)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := mergedConfig(f.TokenizerConfigJSON, f.SpecialTokensMapJSON)
	if err != nil {
		return nil, nil, err
	}
	if raw, ok := cfg["tokenizer_class"]; ok {
		var class string
		_ = json.Unmarshal(raw, &class)
		if class != "GPT2Tokenizer" && class != "GPT2TokenizerFast" {
			return nil, nil, cfgErr("tokenizer_class", "%s without tokenizer.json is not supported (only GPT2Tokenizer's vocab.json + merges.txt)", raw)
		}
	}
	if flagTrue(cfg, "add_prefix_space") {
		return nil, nil, cfgErr("add_prefix_space", "true is not supported")
	}
	added, err := addedFromConfig(cfg, vocab)
	if err != nil {
		return nil, nil, err
	}
	post := map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true}
	if flagTrue(cfg, "add_bos_token") {
		bos, _ := tokenString(cfg["bos_token"])
		id, ok := tokenIDIn(bos, vocab, added)
		if !ok {
			return nil, nil, cfgErr("bos_token", "add_bos_token is true but bos_token %q is not a token", bos)
		}
		post = map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": bos, "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"pair":           []any{},
			"special_tokens": map[string]any{bos: map[string]any{"id": bos, "ids": []uint32{id}, "tokens": []string{bos}}}}
	}
	spec := map[string]any{
		"version":        "1.0",
		"truncation":     nil,
		"padding":        nil,
		"added_tokens":   added,
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": post,
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": json.RawMessage(bytes.TrimSpace(f.VocabJSON)), "merges": merges},
	}
	if tokenizerJSON, err = json.Marshal(spec); err != nil {
		return nil, nil, err
	}
	if tokenizerConfigJSON, err = json.Marshal(cfg); err != nil {
		return nil, nil, err
	}
	return tokenizerJSON, tokenizerConfigJSON, nil
}

// readVocabJSON checks vocab.json: a JSON object mapping each token to a non-negative id.
func readVocabJSON(data []byte) (map[string]uint32, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("vocab.json: empty; expected a JSON object mapping tokens to ids")
	}
	var raw map[string]json.Number
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("vocab.json: expected a JSON object mapping tokens to ids: %v", err)
	}
	vocab := make(map[string]uint32, len(raw))
	for tok, num := range raw {
		id, err := strconv.ParseUint(string(num), 10, 30)
		if err != nil {
			return nil, fmt.Errorf("vocab.json: the id of %q is %s; expected an integer from 0 to 2^30-1", tok, num)
		}
		vocab[tok] = uint32(id)
	}
	return vocab, nil
}

// readMergesTXT parses merges.txt: an optional "#version" first line, then one merge per line,
// two tokens separated by one space, each token and their concatenation in the vocab.
func readMergesTXT(data []byte, vocab map[string]uint32) ([][2]string, error) {
	lines := strings.Split(string(data), "\n")
	var merges [][2]string
	for i, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || (i == 0 && strings.HasPrefix(line, "#version")) {
			continue
		}
		a, b, ok := strings.Cut(line, " ")
		if !ok || a == "" || b == "" || strings.Contains(b, " ") {
			return nil, fmt.Errorf("merges.txt: line %d: %q is not two tokens separated by one space", i+1, line)
		}
		for _, tok := range []string{a, b, a + b} {
			if _, ok := vocab[tok]; !ok {
				return nil, fmt.Errorf("merges.txt: line %d: %q is not in vocab.json", i+1, tok)
			}
		}
		merges = append(merges, [2]string{a, b})
	}
	if len(merges) == 0 {
		return nil, errors.New("merges.txt: no merges; expected \"#version: 0.2\" then one \"a b\" pair per line")
	}
	return merges, nil
}

// mergedConfig is tokenizer_config.json with the special tokens of special_tokens_map.json it
// lacks (tokenizer_config.json wins, as in transformers) and GPT2Tokenizer's defaults.
func mergedConfig(cfgJSON, stmJSON []byte) (map[string]json.RawMessage, error) {
	cfg := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(cfgJSON)) > 0 {
		if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
			return nil, cfgErr("", "not a JSON object: %v", err)
		}
	}
	if len(bytes.TrimSpace(stmJSON)) > 0 {
		var stm map[string]json.RawMessage
		if err := json.Unmarshal(stmJSON, &stm); err != nil {
			return nil, fmt.Errorf("special_tokens_map.json: not a JSON object: %v", err)
		}
		for _, k := range append(slices.Clone(specialKeys), "additional_special_tokens") {
			if v, ok := stm[k]; ok {
				if _, set := cfg[k]; !set {
					cfg[k] = v
				}
			}
		}
	}
	def, _ := json.Marshal(gpt2Default)
	for _, k := range []string{"bos_token", "eos_token", "unk_token"} {
		if _, set := cfg[k]; !set {
			cfg[k] = def
		}
	}
	return cfg, nil
}

// flagTrue reports whether cfg[key] is the JSON value true.
func flagTrue(cfg map[string]json.RawMessage, key string) bool {
	var b bool
	return json.Unmarshal(cfg[key], &b) == nil && b
}

// addedFromConfig lists the added tokens transformers registers: added_tokens_decoder in id order,
// then each special token (an AddedToken with special=True, normalized=False unless the config
// spells the object out).
func addedFromConfig(cfg map[string]json.RawMessage, vocab map[string]uint32) ([]map[string]any, error) {
	var out []map[string]any
	seen := map[string]bool{}
	add := func(raw json.RawMessage, field string, special bool) error {
		var obj struct {
			Content    *string `json:"content"`
			SingleWord bool    `json:"single_word"`
			Lstrip     bool    `json:"lstrip"`
			Rstrip     bool    `json:"rstrip"`
			Normalized *bool   `json:"normalized"`
			Special    *bool   `json:"special"`
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			obj.Content = &s
		} else if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
			return cfgErr(field, "expected a string or an object with \"content\"")
		}
		if seen[*obj.Content] || *obj.Content == "" {
			return nil
		}
		seen[*obj.Content] = true
		normalized := false
		if obj.Normalized != nil {
			normalized = *obj.Normalized
		}
		if obj.Special != nil {
			special = *obj.Special
		}
		out = append(out, map[string]any{"content": *obj.Content, "single_word": obj.SingleWord, "lstrip": obj.Lstrip,
			"rstrip": obj.Rstrip, "normalized": normalized, "special": special})
		return nil
	}
	if raw, ok := cfg["added_tokens_decoder"]; ok && string(raw) != "null" {
		var dec map[string]json.RawMessage
		if err := json.Unmarshal(raw, &dec); err != nil {
			return nil, cfgErr("added_tokens_decoder", "expected an object mapping ids to tokens: %v", err)
		}
		ids := make([]int, 0, len(dec))
		byID := map[int]json.RawMessage{}
		for k, v := range dec {
			id, err := strconv.Atoi(k)
			if err != nil || id < 0 {
				return nil, cfgErr("added_tokens_decoder", "key %q is not a token id", k)
			}
			ids = append(ids, id)
			byID[id] = v
		}
		sort.Ints(ids)
		declared := map[string]int{}
		for _, id := range ids {
			n := len(out)
			if err := add(byID[id], fmt.Sprintf("added_tokens_decoder.%d", id), false); err != nil {
				return nil, err
			}
			if len(out) > n {
				declared[out[n]["content"].(string)] = id
			}
		}
		// The ids are not stored: they follow from the order. Refuse a file whose ids disagree.
		for content, id := range declared {
			if got, _ := tokenIDIn(content, vocab, out); int(got) != id {
				return nil, cfgErr(fmt.Sprintf("added_tokens_decoder.%d", id), "%q would get id %d from vocab.json's %d entries, not %d", content, got, len(vocab), id)
			}
		}
	}
	for _, k := range specialKeys {
		if raw, ok := cfg[k]; ok && string(raw) != "null" {
			if err := add(raw, k, true); err != nil {
				return nil, err
			}
		}
	}
	if raw, ok := cfg["additional_special_tokens"]; ok && string(raw) != "null" {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, cfgErr("additional_special_tokens", "not a list: %v", err)
		}
		for i, r := range list {
			if err := add(r, fmt.Sprintf("additional_special_tokens[%d]", i), true); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// tokenIDIn is the id a token gets, as HF's AddedVocabulary assigns it: its vocab id, or else
// the next id from the vocab's size upward in the order the added tokens are listed.
func tokenIDIn(tok string, vocab map[string]uint32, added []map[string]any) (uint32, bool) {
	if id, ok := vocab[tok]; ok {
		return id, true
	}
	next := uint32(len(vocab))
	for _, a := range added {
		c := a["content"].(string)
		if _, in := vocab[c]; in {
			continue
		}
		if c == tok {
			return next, true
		}
		next++
	}
	return 0, false
}

// CompileVocabMerges is [TokenizerJSONFromVocabMerges] followed by [CompileWith]. Errors found
// while compiling name the file the user has: vocab.json for the vocabulary, merges.txt for the
// merges.
func CompileVocabMerges(f VocabMergesFiles, opts CompileOptions) ([]byte, *Info, error) {
	tokJSON, cfgJSON, err := TokenizerJSONFromVocabMerges(f)
	if err != nil {
		return nil, nil, err
	}
	blob, info, err := CompileWith(tokJSON, cfgJSON, opts)
	var fe *fileError
	if errors.As(err, &fe) && fe.file == "tokenizer.json" {
		switch {
		case strings.HasPrefix(fe.field, "model.vocab"):
			return nil, nil, &fileError{"vocab.json", "", fe.msg}
		case strings.HasPrefix(fe.field, "model.merges"):
			return nil, nil, &fileError{"merges.txt", "", fe.msg}
		}
		return nil, nil, fmt.Errorf("the tokenizer built from vocab.json and merges.txt: %w", err)
	}
	return blob, info, err
}
