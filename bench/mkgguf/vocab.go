package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/internal/regfile"
	"github.com/anepack/anepack/tokenizer"
)

// Token types of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
const (
	tokNormal      = 1
	tokControl     = 3
	tokUserDefined = 4
	tokUnused      = 5
)

// preCheckText is the text llama.cpp's converter encodes to recognise a BPE pre-tokenizer: the
// sha256 of the ids, printed as a Python list, names it (get_vocab_base_pre).
const preCheckText = "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫\ufe0f (multiple emojis concatenated) ✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на Български ''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL"

// preNames maps that hash to tokenizer.ggml.pre, for the tokenizers of the supported families
// (the reference tokenizers llama.cpp lists them under: Qwen1.5-7B, Meta-Llama-3-8B, gpt2).
var preNames = map[string]string{
	"e636dc30a262dcc0d8c323492e32ae2b70728f4df7dfe9737d9f920a282b8aea": "qwen2",
	"0ef9807a4087ebef797fc749390439009c3b9eda9ad1a097abbe738f486c01e5": "llama-bpe",
	"3ce83efda5659b07b1ad37ca97ca5797ea4285d9b9ab0dc679e4a720c9da7454": "gpt-2",
}

// specialTypes are the special tokens llama.cpp's converter looks up, in its order, with the
// key each id is written under ("" for none: it finds cls but has nowhere to write it).
var specialTypes = []struct{ typ, key string }{
	{"bos", "tokenizer.ggml.bos_token_id"},
	{"eos", "tokenizer.ggml.eos_token_id"},
	{"unk", "tokenizer.ggml.unknown_token_id"},
	{"sep", "tokenizer.ggml.seperator_token_id"}, // llama.cpp's spelling
	{"pad", "tokenizer.ggml.padding_token_id"},
	{"cls", ""},
	{"mask", "tokenizer.ggml.mask_token_id"},
}

// vocab is the tokenizer part of the GGUF metadata.
type vocab struct {
	pre       string
	tokens    []string
	types     []int32
	merges    []string
	ids       map[string]uint32 // special token type -> id
	add       map[string]bool   // "bos", "eos", "sep" -> add_<typ>_token
	templates []namedTemplate   // "default" first, if any
	// spacePrefix is tokenizer.ggml.add_space_prefix, written for llama only (nil: not written).
	spacePrefix *bool
}

type namedTemplate struct{ name, text string }

// addedToken is an entry of tokenizer.json's added_tokens.
type addedToken struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

// tokenizerFile is what mkgguf reads of tokenizer.json itself; the vocabulary comes from the
// tokenizer package, which also refuses any tokenizer it cannot reproduce exactly.
type tokenizerFile struct {
	AddedTokens   []addedToken    `json:"added_tokens"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Model         struct {
		Merges json.RawMessage `json:"merges"`
	} `json:"model"`
}

// readVocab builds the tokenizer metadata of llama.cpp's GPT-2-style BPE vocabularies
// (_set_vocab_gpt2 and gguf-py's SpecialVocab) from dir's tokenizer.json, tokenizer_config.json
// and config.json (fields).
func readVocab(dir string, tg target, c *arch.Config, fields map[string]json.RawMessage) (*vocab, error) {
	tjPath := filepath.Join(dir, "tokenizer.json")
	tj, err := regfile.ReadFile(tjPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no tokenizer.json: mkgguf needs the tokenizer in that form", dir)
		}
		return nil, err
	}
	tcPath := filepath.Join(dir, "tokenizer_config.json")
	tc, err := regfile.ReadFile(tcPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	tk, err := tokenizer.LoadJSON(tj, tc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	var tf tokenizerFile
	if err := json.Unmarshal(tj, &tf); err != nil {
		return nil, fmt.Errorf("%s: %v", tjPath, err)
	}
	var tcfg map[string]json.RawMessage
	if tc != nil {
		if err := json.Unmarshal(tc, &tcfg); err != nil {
			return nil, fmt.Errorf("%s: not a JSON object: %v", tcPath, err)
		}
	}
	v := &vocab{ids: map[string]uint32{}, add: map[string]bool{}}
	if v.pre, err = preName(tk, tjPath); err != nil {
		return nil, err
	}
	if err := v.readTokens(tk, tf.AddedTokens, c.VocabSize, tjPath); err != nil {
		return nil, err
	}
	if v.merges, err = readMerges(tf.Model.Merges, tjPath); err != nil {
		return nil, err
	}
	if err := v.readSpecials(tf, tcfg, fields, tcPath); err != nil {
		return nil, err
	}
	if v.templates, err = readTemplates(dir, tcfg, tcPath); err != nil {
		return nil, err
	}
	if tg.llamaKeys {
		v.llamaRules(tcfg, c.VocabSize)
	}
	return v, nil
}

// llamaRules adds what llama.cpp's converter writes for its LLaMA class alone:
// tokenizer_config.json's add_prefix_space, and add_bos_token false for a vocabulary of 49152
// tokens (its rule for small Granite models, which SmolLM's vocabulary size meets too).
func (v *vocab) llamaRules(tcfg map[string]json.RawMessage, vocabSize int) {
	var sp bool
	if raw, ok := tcfg["add_prefix_space"]; ok && string(raw) != "null" && json.Unmarshal(raw, &sp) == nil {
		v.spacePrefix = &sp
	}
	if vocabSize == 49152 {
		v.add["bos"] = false
	}
}

// preName names the pre-tokenizer the way llama.cpp's converter does: by the hash of the ids of
// its check text, encoded as transformers' encode() does (special tokens added).
func preName(tk *tokenizer.Tokenizer, file string) (string, error) {
	ids := tk.EncodeWithSpecials(preCheckText, tokenizer.EncodeOptions{AddSpecialTokens: true})
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	sum := sha256.Sum256([]byte("[" + strings.Join(s, ", ") + "]"))
	h := hex.EncodeToString(sum[:])
	if name, ok := preNames[h]; ok {
		return name, nil
	}
	known := make([]string, 0, len(preNames))
	for _, n := range preNames {
		known = append(known, n)
	}
	sort.Strings(known)
	return "", fmt.Errorf("%s: the pre-tokenizer is not one mkgguf can name for llama.cpp (check hash %s; known: %s)", file, h, strings.Join(known, ", "))
}

// readTokens fills tokens and types for ids 0 .. vocabSize-1 (config.json's vocab_size, which
// may exceed the tokenizer's: the rest are "[PAD<id>]", unused). An added token is a control
// token when it is special or looks like one ("<|...|>"), else user-defined.
func (v *vocab) readTokens(tk *tokenizer.Tokenizer, added []addedToken, vocabSize int, file string) error {
	if n := tk.VocabSize(); n > vocabSize {
		return fmt.Errorf("%s: token ids reach %d; config.json's vocab_size is %d", file, n-1, vocabSize)
	}
	addedByID := map[int]addedToken{}
	for _, a := range added {
		addedByID[a.ID] = a
	}
	v.tokens = make([]string, vocabSize)
	v.types = make([]int32, vocabSize)
	for id := range v.tokens {
		tok, ok := tk.Token(id)
		switch a, isAdded := addedByID[id]; {
		case !ok:
			tok, v.types[id] = "[PAD"+strconv.Itoa(id)+"]", tokUnused
		case isAdded && (a.Special || looksSpecial(tok)):
			v.types[id] = tokControl
		case isAdded:
			// llama.cpp expects user-defined tokens with real spaces.
			tok, v.types[id] = strings.ReplaceAll(tok, "▁", " "), tokUserDefined
		default:
			v.types[id] = tokNormal
		}
		v.tokens[id] = tok
	}
	return nil
}

// looksSpecial is the converter's test for added tokens that ought to be control tokens even
// where tokenizer.json does not mark them special.
func looksSpecial(t string) bool {
	switch t {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return strings.HasPrefix(t, "<|") && strings.HasSuffix(t, "|>") ||
		strings.HasPrefix(t, "<｜") && strings.HasSuffix(t, "｜>") ||
		strings.HasPrefix(t, "<unused") && strings.HasSuffix(t, ">")
}

// readMerges returns model.merges as "left right" strings, in rank order. The pair form of
// newer files may have a space inside a part; the converter writes each such space as the
// character 256 code points above it (U+0120), since the space separates the two parts.
func readMerges(raw json.RawMessage, file string) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, fmt.Errorf("%s: field \"model.merges\": missing; a BPE tokenizer needs its merges", file)
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err == nil {
		return lines, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("%s: field \"model.merges\": expected [\"a b\", ...] or [[\"a\", \"b\"], ...]", file)
	}
	lines = make([]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("%s: field \"model.merges[%d]\": %d parts; expected 2", file, i, len(p))
		}
		lines[i] = strings.ReplaceAll(p[0], " ", "\u0120") + " " + strings.ReplaceAll(p[1], " ", "\u0120")
	}
	return lines, nil
}
