package pack

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/anepack/anepack/tokenizer"
)

// tokenizerJob is a tokenizer compile running on its own goroutine.
type tokenizerJob struct {
	done   chan struct{}
	tables []byte
	info   json.RawMessage
	err    error
}

// startTokenizer starts compiling src's tokenizer.
func startTokenizer(src *source) *tokenizerJob {
	j := &tokenizerJob{done: make(chan struct{})}
	go func() {
		defer close(j.done)
		j.tables, j.info, j.err = compileTokenizer(src)
	}()
	return j
}

// failed returns the compile's error if it has already finished with one, without waiting:
// a tokenizer that cannot be compiled stops the pack early.
func (j *tokenizerJob) failed() error {
	select {
	case <-j.done:
		return j.err
	default:
		return nil
	}
}

// wait returns the compiled tables and their summary.
func (j *tokenizerJob) wait() ([]byte, json.RawMessage, error) {
	<-j.done
	return j.tables, j.info, j.err
}

// compileTokenizer compiles tokenizer.json + tokenizer_config.json (or vocab.json + merges.txt)
// into the binary tables the runtime loads without parsing JSON, and the summary stored in the
// manifest.
func compileTokenizer(src *source) ([]byte, json.RawMessage, error) {
	opts := tokenizer.CompileOptions{ChatTemplate: string(src.chatTemplate)}
	var tables []byte
	var info *tokenizer.Info
	var err error
	if src.tokJSON == nil {
		tables, info, err = tokenizer.CompileVocabMerges(tokenizer.VocabMergesFiles{VocabJSON: src.vocabJSON, MergesTXT: src.mergesTXT,
			TokenizerConfigJSON: src.tokConfigRaw, SpecialTokensMapJSON: src.specialTokensMap}, opts)
		if err != nil {
			// The error names the file (vocab.json, merges.txt, tokenizer_config.json, ...).
			return nil, nil, fmt.Errorf("%s: %w", src.dir, err)
		}
	} else if tables, info, err = tokenizer.CompileWith(src.tokJSON, src.tokConfigRaw, opts); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Join(src.dir, TokenizerFile), err)
	}
	infoJSON, err := json.Marshal(info)
	if err != nil {
		return nil, nil, err
	}
	return tables, infoJSON, nil
}
