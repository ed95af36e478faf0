package pack

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/anepack/anepack/tokenizer"
)

// compileTokenizer compiles tokenizer.json + tokenizer_config.json into the binary tables the
// runtime loads without parsing JSON, and the summary stored in the manifest.
func compileTokenizer(src *source) ([]byte, json.RawMessage, error) {
	tables, info, err := tokenizer.CompileWith(src.tokJSON, src.tokConfigRaw, tokenizer.CompileOptions{ChatTemplate: string(src.chatTemplate)})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Join(src.dir, TokenizerFile), err)
	}
	infoJSON, err := json.Marshal(info)
	if err != nil {
		return nil, nil, err
	}
	return tables, infoJSON, nil
}
