package pack

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/regfile"
)

// Source file names of a Hugging Face checkpoint directory.
const (
	ConfigFile           = "config.json"
	GenerationConfigFile = "generation_config.json"
	TokenizerFile        = "tokenizer.json"
	TokenizerConfigFile  = "tokenizer_config.json"
	// ChatTemplateFile is where newer checkpoints keep the chat template instead of inside
	// tokenizer_config.json; when present it wins, as in transformers.
	ChatTemplateFile = "chat_template.jinja"
	// VocabFile and MergesFile are GPT-2-style tokenizer files that repositories saved without
	// tokenizer.json carry instead (many GPT-2 fine-tunes); SpecialTokensMapFile may name their
	// special tokens. They are read only when tokenizer.json is absent.
	VocabFile            = "vocab.json"
	MergesFile           = "merges.txt"
	SpecialTokensMapFile = "special_tokens_map.json"
)

// source is a checkpoint directory's small files, read and validated.
type source struct {
	dir          string
	configJSON   []byte
	config       *arch.Config
	genJSON      []byte // nil when generation_config.json is absent
	tokJSON      []byte // nil when the tokenizer comes from vocab.json + merges.txt
	tokConfigRaw []byte // nil when absent (allowed only with vocab.json + merges.txt)
	chatTemplate []byte // nil when chat_template.jinja is absent
	// vocab.json, merges.txt and special_tokens_map.json, read when tokenizer.json is absent.
	vocabJSON, mergesTXT, specialTokensMap []byte
}

func readSource(dir string) (*source, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory; expected a Hugging Face checkpoint directory", dir)
	}
	s := &source{dir: dir}
	read := func(name string, required bool) ([]byte, error) {
		b, err := regfile.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) && !required {
			return nil, nil
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: missing; a checkpoint needs %s", filepath.Join(dir, name), name)
		}
		return b, err
	}
	if s.configJSON, err = read(ConfigFile, true); err != nil {
		return nil, err
	}
	if s.config, err = arch.ParseConfig(s.configJSON, filepath.Join(dir, ConfigFile)); err != nil {
		return nil, err
	}
	if s.genJSON, err = read(GenerationConfigFile, false); err != nil {
		return nil, err
	}
	if err := s.readTokenizerFiles(read); err != nil {
		return nil, err
	}
	if s.chatTemplate, err = read(ChatTemplateFile, false); err != nil {
		return nil, err
	}
	return s, nil
}

// readTokenizerFiles reads tokenizer.json and tokenizer_config.json, or, for a repository saved
// without tokenizer.json, vocab.json and merges.txt with the optional tokenizer_config.json and
// special_tokens_map.json (what transformers' GPT2Tokenizer loads).
func (s *source) readTokenizerFiles(read func(string, bool) ([]byte, error)) error {
	var err error
	if s.tokJSON, err = read(TokenizerFile, false); err != nil {
		return err
	}
	if s.tokJSON != nil {
		s.tokConfigRaw, err = read(TokenizerConfigFile, true)
		return err
	}
	if s.vocabJSON, err = read(VocabFile, false); err != nil {
		return err
	}
	if s.mergesTXT, err = read(MergesFile, false); err != nil {
		return err
	}
	if s.vocabJSON == nil || s.mergesTXT == nil {
		return fmt.Errorf("%s: missing; a checkpoint needs %s, or %s and %s", filepath.Join(s.dir, TokenizerFile), TokenizerFile, VocabFile, MergesFile)
	}
	if s.tokConfigRaw, err = read(TokenizerConfigFile, false); err != nil {
		return err
	}
	s.specialTokensMap, err = read(SpecialTokensMapFile, false)
	return err
}

// tokenizerFiles are the tokenizer files packing read, by name, in the order they are stored.
func (s *source) tokenizerFiles() []namedFile {
	return []namedFile{{TokenizerFile, s.tokJSON}, {TokenizerConfigFile, s.tokConfigRaw}, {VocabFile, s.vocabJSON},
		{MergesFile, s.mergesTXT}, {SpecialTokensMapFile, s.specialTokensMap}, {ChatTemplateFile, s.chatTemplate}}
}

// namedFile is a source file's name and content (nil when the checkpoint lacks it).
type namedFile struct {
	name string
	data []byte
}

// generation merges config.json's token ids with generation_config.json, which wins where both
// set a value (as transformers' GenerationConfig does).
func (s *source) generation() (format.Generation, error) {
	var g format.Generation
	if s.config.BOSTokenID >= 0 {
		id := s.config.BOSTokenID
		g.BOSTokenID = &id
	}
	g.EOSTokenIDs = s.config.EOSTokenIDs
	if s.genJSON == nil {
		return g, nil
	}
	var raw struct {
		BOSTokenID        *int            `json:"bos_token_id"`
		EOSTokenID        json.RawMessage `json:"eos_token_id"`
		PadTokenID        *int            `json:"pad_token_id"`
		DoSample          *bool           `json:"do_sample"`
		Temperature       *float64        `json:"temperature"`
		TopK              *int            `json:"top_k"`
		TopP              *float64        `json:"top_p"`
		MinP              *float64        `json:"min_p"`
		RepetitionPenalty *float64        `json:"repetition_penalty"`
		MaxNewTokens      *int            `json:"max_new_tokens"`
	}
	file := filepath.Join(s.dir, GenerationConfigFile)
	if err := json.Unmarshal(s.genJSON, &raw); err != nil {
		return g, fmt.Errorf("%s: %w", file, err)
	}
	if raw.BOSTokenID != nil {
		g.BOSTokenID = raw.BOSTokenID
	}
	if len(raw.EOSTokenID) > 0 && string(raw.EOSTokenID) != "null" {
		var one int
		var many []int
		if json.Unmarshal(raw.EOSTokenID, &one) == nil {
			g.EOSTokenIDs = []int{one}
		} else if json.Unmarshal(raw.EOSTokenID, &many) == nil {
			g.EOSTokenIDs = many
		} else {
			return g, fmt.Errorf("%s: field \"eos_token_id\": expected an integer or a list of integers, got %s", file, raw.EOSTokenID)
		}
	}
	g.PadTokenID, g.DoSample, g.Temperature, g.TopK = raw.PadTokenID, raw.DoSample, raw.Temperature, raw.TopK
	g.TopP, g.MinP, g.RepetitionPenalty, g.MaxNewTokens = raw.TopP, raw.MinP, raw.RepetitionPenalty, raw.MaxNewTokens
	if err := g.Check(); err != nil {
		return g, fmt.Errorf("%s: %w", file, err)
	}
	return g, nil
}
