package arch

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// configParser reads config.json fields by their canonical (Llama/Qwen) names, looking each up
// under the family's own spelling (GPT-2's n_embd for hidden_size, ...), and collects the first
// error; each accessor is a no-op once an error is recorded. Errors name the field as the file
// spells it.
type configParser struct {
	file  string
	raw   map[string]json.RawMessage
	spell map[string]string // canonical name -> the family's spelling
	// nestedIn is the object the model's fields come from ("text_config"), and topOnly the
	// fields read from the top level instead because it lacks them; both for messages.
	nestedIn string
	topOnly  map[string]bool
	err      error
}

// nest makes the members of the object field (a multimodal config's text_config) the fields
// read, falling back to the top level for those it lacks. tie_word_embeddings may be given in
// both places: the two must then agree, since which one transformers honours has changed
// between versions.
func (p *configParser) nest(field string) error {
	inner := p.object(field)
	if p.err != nil {
		return p.err
	}
	if inner == nil {
		return p.errorf(field, "missing; %s keeps the language model's fields there", p.raw["architectures"])
	}
	if top, ok := p.value("tie_word_embeddings"); ok {
		if in, ok := inner["tie_word_embeddings"]; ok && string(in) != "null" && string(in) != string(top) {
			return p.errorf("tie_word_embeddings", "is %s at the top level and %s in %s; expected one value", top, in, field)
		}
	}
	merged := make(map[string]json.RawMessage, len(p.raw)+len(inner))
	p.topOnly = map[string]bool{}
	for k, v := range p.raw {
		merged[k] = v
		p.topOnly[k] = true
	}
	for k, v := range inner {
		merged[k] = v
		delete(p.topOnly, k)
	}
	p.raw, p.nestedIn = merged, field
	return nil
}

// display names a field (or a dotted path into one) as the file spells and nests it, for
// messages: "text_config.hidden_size" for a model field of a multimodal config.
func (p *configParser) display(field string) string {
	s := p.spelling(field)
	root, _, _ := strings.Cut(s, ".")
	if p.nestedIn == "" || p.topOnly[root] || root == "architectures" {
		return s
	}
	return p.nestedIn + "." + s
}

// respell makes field read under the name spelled, for this file only (a field with two
// spellings, where this file uses the second; messages name it as the file does).
func (p *configParser) respell(field, spelled string) {
	m := make(map[string]string, len(p.spell)+1)
	for k, v := range p.spell {
		m[k] = v
	}
	m[field] = spelled
	p.spell = m
}

// spelling returns the name a field has in this family's config.json.
func (p *configParser) spelling(field string) string {
	if s, ok := p.spell[field]; ok {
		return s
	}
	return field
}

func (p *configParser) value(field string) (json.RawMessage, bool) {
	v, ok := p.raw[p.spelling(field)]
	if !ok || string(v) == "null" {
		return nil, false
	}
	return v, true
}

func (p *configParser) has(field string) bool {
	_, ok := p.value(field)
	return ok
}

func (p *configParser) errorf(field, format string, args ...any) error {
	return &ConfigError{File: p.file, Field: p.display(field), Msg: fmt.Sprintf(format, args...)}
}

func (p *configParser) fail(field, format string, args ...any) {
	if p.err == nil {
		p.err = p.errorf(field, format, args...)
	}
}

func (p *configParser) number(field string) (float64, bool) {
	raw, ok := p.value(field)
	if p.err != nil || !ok {
		return 0, false
	}
	return p.numberOf(field, raw)
}

// numberOf decodes raw as a JSON number. json.Number also accepts a quoted number ("896");
// config.json must hold a real number.
func (p *configParser) numberOf(field string, raw json.RawMessage) (float64, bool) {
	var n json.Number
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		p.fail(field, "expected a number, got %s", raw)
		return 0, false
	}
	f, err := n.Float64()
	if err != nil {
		p.fail(field, "expected a number, got %s", raw)
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
		p.fail(field, "expected an integer, got %v", f)
		return def
	}
	return int(f)
}

func (p *configParser) positiveInt(field string) int {
	v := p.int(field, true, 0)
	if p.err == nil && v <= 0 {
		p.fail(field, "expected a positive integer, got %d", v)
	}
	return v
}

func (p *configParser) optPositiveInt(field string, def int) int {
	v := p.int(field, false, def)
	if p.err == nil && v <= 0 {
		p.fail(field, "expected a positive integer, got %d", v)
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
		p.fail(field, "expected a positive number, got %v", f)
	}
	return f
}

func (p *configParser) optBool(field string, def bool) bool {
	raw, ok := p.value(field)
	if p.err != nil || !ok {
		return def
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		p.fail(field, "expected true or false, got %s", raw)
	}
	return b
}

func (p *configParser) optString(field, def string) string {
	raw, ok := p.value(field)
	if p.err != nil || !ok {
		return def
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.fail(field, "expected a string, got %s", raw)
	}
	return s
}

func (p *configParser) stringList(field string) []string {
	raw, ok := p.value(field)
	if p.err != nil || !ok {
		return nil
	}
	var s []string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.fail(field, "expected a list of strings, got %s", raw)
	}
	return s
}

// intList reads a list of integers (nil when absent or null).
func (p *configParser) intList(field string) []int {
	raw, ok := p.value(field)
	if p.err != nil || !ok {
		return nil
	}
	var l []int
	if err := json.Unmarshal(raw, &l); err != nil {
		p.fail(field, "expected a list of integers, got %s", raw)
	}
	return l
}

// intOrList accepts Hugging Face's `"eos_token_id": 2` and `"eos_token_id": [2, 3]`.
func (p *configParser) intOrList(field string) []int {
	raw, ok := p.value(field)
	if p.err != nil || !ok {
		return nil
	}
	var one int
	if err := json.Unmarshal(raw, &one); err == nil {
		return []int{one}
	}
	var many []int
	if err := json.Unmarshal(raw, &many); err != nil {
		p.fail(field, "expected an integer or a list of integers, got %s", raw)
	}
	return many
}

// object returns a JSON object field as its members, or nil when absent.
func (p *configParser) object(field string) map[string]json.RawMessage {
	raw, ok := p.value(field)
	if p.err != nil || !ok {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		p.fail(field, "expected an object, got %s", raw)
	}
	return m
}
