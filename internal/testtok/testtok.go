// Package testtok gives tests the real tokenizers of the repository's testdata/ (Qwen, Llama 3,
// GPT-2, Gemma 3: testdata/<family>-tokenizer), and GPT-2's also in the other form Hub
// repositories ship it: the "slow" GPT2Tokenizer files vocab.json + merges.txt that many
// fine-tunes have instead of tokenizer.json, derived from it exactly as transformers'
// GPT2Tokenizer.save_vocabulary writes them.
package testtok

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Split returns the vocab.json and merges.txt equivalent to a byte-level BPE tokenizer.json:
// vocab.json is json.dumps(vocab, indent=2, sort_keys=True, ensure_ascii=False) + "\n", and
// merges.txt is "#version: 0.2" then one "a b" line per merge, by rank.
func Split(tokenizerJSON []byte) (vocabJSON, mergesTXT []byte, err error) {
	var spec struct {
		Model struct {
			Vocab  map[string]int  `json:"vocab"`
			Merges json.RawMessage `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(tokenizerJSON, &spec); err != nil {
		return nil, nil, fmt.Errorf("testtok: tokenizer.json: %w", err)
	}
	if len(spec.Model.Vocab) == 0 {
		return nil, nil, errors.New("testtok: tokenizer.json: model.vocab is empty")
	}
	var pairs [][2]string
	if err := json.Unmarshal(spec.Model.Merges, &pairs); err != nil {
		var legacy []string
		if err2 := json.Unmarshal(spec.Model.Merges, &legacy); err2 != nil {
			return nil, nil, fmt.Errorf("testtok: tokenizer.json: model.merges: %w", err)
		}
		pairs = pairs[:0]
		for _, l := range legacy {
			a, b, _ := strings.Cut(l, " ")
			pairs = append(pairs, [2]string{a, b})
		}
	}
	var v bytes.Buffer
	enc := json.NewEncoder(&v) // sorts map keys, as sort_keys=True
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(spec.Model.Vocab); err != nil {
		return nil, nil, err
	}
	var m bytes.Buffer
	m.WriteString("#version: 0.2\n")
	for _, p := range pairs {
		m.WriteString(p[0] + " " + p[1] + "\n")
	}
	return v.Bytes(), m.Bytes(), nil
}

// Root returns the repository root (the directory holding go.mod) above the working directory,
// which `go test` sets to the package's directory.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testtok: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Files returns testdata/<family>-tokenizer's tokenizer.json (decompressed) and
// tokenizer_config.json; family is "qwen", "llama3", "gpt2" or "gemma3".
func Files(family string) (tokenizerJSON, tokenizerConfigJSON []byte, err error) {
	root, err := Root()
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(root, "testdata", family+"-tokenizer")
	z, err := os.ReadFile(filepath.Join(dir, "tokenizer.json.zst"))
	if err != nil {
		return nil, nil, err
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		return nil, nil, err
	}
	defer dec.Close()
	if tokenizerJSON, err = dec.DecodeAll(z, nil); err != nil {
		return nil, nil, fmt.Errorf("testtok: %s: %w", family, err)
	}
	if tokenizerConfigJSON, err = os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err != nil {
		return nil, nil, err
	}
	return tokenizerJSON, tokenizerConfigJSON, nil
}

// GPT2SlowFiles returns GPT-2's tokenizer as a repository without tokenizer.json has it, by file
// name: vocab.json, merges.txt and tokenizer_config.json.
func GPT2SlowFiles() (map[string][]byte, error) {
	tj, cfg, err := Files("gpt2")
	if err != nil {
		return nil, err
	}
	vocab, merges, err := Split(tj)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"vocab.json": vocab, "merges.txt": merges, "tokenizer_config.json": cfg}, nil
}
