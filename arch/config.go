// Package arch holds the architecture tables: which Hugging Face config.json fields a model family
// needs, and the names, shapes and roles of its tensors. It is a leaf package: every other package
// asks it what a model looks like instead of keeping its own list of names.
//
// An architecture is one small file that keeps Hugging Face's names (see qwen2.go); the table of
// families is one literal map in families.go.
package arch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Config is the subset of a Hugging Face config.json that anepack needs, after validation.
// Field names follow Hugging Face's.
type Config struct {
	Architecture          string  `json:"architecture"`
	ModelType             string  `json:"model_type"`
	HiddenSize            int     `json:"hidden_size"`
	IntermediateSize      int     `json:"intermediate_size"`
	NumHiddenLayers       int     `json:"num_hidden_layers"`
	NumAttentionHeads     int     `json:"num_attention_heads"`
	NumKeyValueHeads      int     `json:"num_key_value_heads"`
	HeadDim               int     `json:"head_dim"`
	VocabSize             int     `json:"vocab_size"`
	MaxPositionEmbeddings int     `json:"max_position_embeddings"`
	RMSNormEps            float64 `json:"rms_norm_eps"`
	RopeTheta             float64 `json:"rope_theta"`
	TieWordEmbeddings     bool    `json:"tie_word_embeddings"`
	HiddenAct             string  `json:"hidden_act"`
	// BOSTokenID is -1 when the config has none.
	BOSTokenID int `json:"bos_token_id"`
	// EOSTokenIDs lists every end-of-sequence id (config.json allows an int or a list).
	EOSTokenIDs []int `json:"eos_token_ids"`
}

// ConfigError reports a config.json that cannot be used, naming the file and the field.
type ConfigError struct {
	File  string // the file name as the user gave it, e.g. "model/config.json"
	Field string // the JSON field, e.g. "num_key_value_heads"; empty for whole-file errors
	Msg   string // what was expected
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s: field %q: %s", e.File, e.Field, e.Msg)
}

// rawConfig mirrors config.json loosely so that every field can be checked and reported by name.
type rawConfig map[string]json.RawMessage

// ParseConfig reads a Hugging Face config.json. file is used only in error messages.
// It checks that the architecture is supported and that every field the family needs is present
// and consistent, and fills Hugging Face's defaults (head_dim, tie_word_embeddings, ...).
func ParseConfig(data []byte, file string) (*Config, error) {
	var raw rawConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, &ConfigError{File: file, Msg: "not a JSON object: " + err.Error()}
	}
	p := configParser{file: file, raw: raw}
	archs := p.stringList("architectures")
	if p.err != nil {
		return nil, p.err
	}
	if len(archs) == 0 {
		return nil, &ConfigError{File: file, Field: "architectures", Msg: "missing; expected a list such as [\"Qwen2ForCausalLM\"]"}
	}
	fam, ok := Families[archs[0]]
	if !ok {
		return nil, &ConfigError{File: file, Field: "architectures",
			Msg: fmt.Sprintf("%q is not supported; supported: %s", archs[0], strings.Join(Supported(), ", "))}
	}
	c := &Config{Architecture: archs[0]}
	c.ModelType = p.optString("model_type", "")
	c.HiddenSize = p.positiveInt("hidden_size")
	c.IntermediateSize = p.positiveInt("intermediate_size")
	c.NumHiddenLayers = p.positiveInt("num_hidden_layers")
	c.NumAttentionHeads = p.positiveInt("num_attention_heads")
	c.NumKeyValueHeads = p.optPositiveInt("num_key_value_heads", c.NumAttentionHeads)
	c.VocabSize = p.positiveInt("vocab_size")
	c.MaxPositionEmbeddings = p.positiveInt("max_position_embeddings")
	c.RMSNormEps = p.positiveFloat("rms_norm_eps", 1e-6)
	c.RopeTheta = p.positiveFloat("rope_theta", 10000)
	c.TieWordEmbeddings = p.optBool("tie_word_embeddings", false)
	c.HiddenAct = p.optString("hidden_act", "silu")
	c.BOSTokenID = p.optInt("bos_token_id", -1)
	c.EOSTokenIDs = p.intOrList("eos_token_id")
	if p.err != nil {
		return nil, p.err
	}
	if c.NumAttentionHeads > 0 && c.HiddenSize%c.NumAttentionHeads != 0 && !p.has("head_dim") {
		return nil, &ConfigError{File: file, Field: "num_attention_heads",
			Msg: fmt.Sprintf("hidden_size %d is not divisible by %d heads and head_dim is not given", c.HiddenSize, c.NumAttentionHeads)}
	}
	c.HeadDim = p.optPositiveInt("head_dim", c.HiddenSize/max(c.NumAttentionHeads, 1))
	if p.err != nil {
		return nil, p.err
	}
	if c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		return nil, &ConfigError{File: file, Field: "num_key_value_heads",
			Msg: fmt.Sprintf("%d must divide num_attention_heads (%d)", c.NumKeyValueHeads, c.NumAttentionHeads)}
	}
	if c.HeadDim%2 != 0 {
		return nil, &ConfigError{File: file, Field: "head_dim", Msg: fmt.Sprintf("%d must be even for rotary embeddings", c.HeadDim)}
	}
	if err := fam.Check(c, &p); err != nil {
		return nil, err
	}
	return c, nil
}

// configParser collects the first error; each accessor is a no-op once an error is recorded.
type configParser struct {
	file string
	raw  rawConfig
	err  error
}

func (p *configParser) has(field string) bool {
	v, ok := p.raw[field]
	return ok && string(v) != "null"
}

func (p *configParser) fail(field, msg string) {
	if p.err == nil {
		p.err = &ConfigError{File: p.file, Field: field, Msg: msg}
	}
}

func (p *configParser) number(field string) (float64, bool) {
	if p.err != nil || !p.has(field) {
		return 0, false
	}
	var n json.Number
	raw := p.raw[field]
	// json.Number also accepts a quoted number ("896"); config.json must hold a real number.
	if len(raw) == 0 || raw[0] == '"' {
		p.fail(field, "expected a number, got "+string(raw))
		return 0, false
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		p.fail(field, "expected a number, got "+string(p.raw[field]))
		return 0, false
	}
	f, err := n.Float64()
	if err != nil {
		p.fail(field, "expected a number, got "+string(p.raw[field]))
		return 0, false
	}
	return f, true
}

func (p *configParser) int(field string, required bool, def int) int {
	f, ok := p.number(field)
	if !ok {
		if required && p.err == nil {
			p.fail(field, "missing; expected an integer")
		}
		return def
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<40 {
		p.fail(field, fmt.Sprintf("expected an integer, got %v", f))
		return def
	}
	return int(f)
}

func (p *configParser) positiveInt(field string) int {
	v := p.int(field, true, 0)
	if p.err == nil && v <= 0 {
		p.fail(field, fmt.Sprintf("expected a positive integer, got %d", v))
	}
	return v
}

func (p *configParser) optPositiveInt(field string, def int) int {
	v := p.int(field, false, def)
	if p.err == nil && v <= 0 {
		p.fail(field, fmt.Sprintf("expected a positive integer, got %d", v))
	}
	return v
}

func (p *configParser) optInt(field string, def int) int { return p.int(field, false, def) }

func (p *configParser) positiveFloat(field string, def float64) float64 {
	f, ok := p.number(field)
	if !ok {
		return def
	}
	if !(f > 0) || math.IsInf(f, 0) {
		p.fail(field, fmt.Sprintf("expected a positive number, got %v", f))
	}
	return f
}

func (p *configParser) optBool(field string, def bool) bool {
	if p.err != nil || !p.has(field) {
		return def
	}
	var b bool
	if err := json.Unmarshal(p.raw[field], &b); err != nil {
		p.fail(field, "expected true or false, got "+string(p.raw[field]))
	}
	return b
}

func (p *configParser) optString(field, def string) string {
	if p.err != nil || !p.has(field) {
		return def
	}
	var s string
	if err := json.Unmarshal(p.raw[field], &s); err != nil {
		p.fail(field, "expected a string, got "+string(p.raw[field]))
	}
	return s
}

func (p *configParser) stringList(field string) []string {
	if p.err != nil || !p.has(field) {
		return nil
	}
	var s []string
	if err := json.Unmarshal(p.raw[field], &s); err != nil {
		p.fail(field, "expected a list of strings, got "+string(p.raw[field]))
	}
	return s
}

// intOrList accepts Hugging Face's `"eos_token_id": 2` and `"eos_token_id": [2, 3]`.
func (p *configParser) intOrList(field string) []int {
	if p.err != nil || !p.has(field) {
		return nil
	}
	var one int
	if err := json.Unmarshal(p.raw[field], &one); err == nil {
		return []int{one}
	}
	var many []int
	if err := json.Unmarshal(p.raw[field], &many); err != nil {
		p.fail(field, "expected an integer or a list of integers, got "+string(p.raw[field]))
	}
	return many
}
