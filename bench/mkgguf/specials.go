package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/anepack/anepack/bench/internal/gguf"
	"github.com/anepack/anepack/internal/regfile"
)

// templatePiece is one entry of a TemplateProcessing template: a special token or a sequence.
type templatePiece struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

func (p templatePiece) special() string {
	if p.SpecialToken == nil {
		return ""
	}
	return p.SpecialToken.ID
}

func (p templatePiece) sequence() string {
	if p.Sequence == nil {
		return ""
	}
	return p.Sequence.ID
}

// postProcessor is tokenizer.json's post_processor: one processor or a Sequence of them.
type postProcessor struct {
	Type       string          `json:"type"`
	Processors []postProcessor `json:"processors"`
	Single     []templatePiece `json:"single"`
	Pair       []templatePiece `json:"pair"`
}

// tokenContent reads a tokenizer_config.json token entry: a string or {"content": ...}.
func tokenContent(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Content
	}
	return ""
}

// readSpecials finds the special token ids and the add_*_token switches as gguf-py's
// SpecialVocab does: whether BOS/EOS are added from a TemplateProcessing post-processor, then
// tokenizer_config.json (its add_<type>_token switches, and each <type>_token looked up among
// tokenizer.json's added tokens), then config.json's <type>_token_id for the types still unset.
func (v *vocab) readSpecials(tf tokenizerFile, tcfg, fields map[string]json.RawMessage, tcPath string) error {
	content := map[string]string{}
	for _, s := range specialTypes {
		content[s.typ] = tokenContent(tcfg[s.typ+"_token"])
	}
	if content["bos"] == "" && content["cls"] != "" && tcfg != nil {
		content["bos"] = content["cls"]
	}
	if content["eos"] == "" && content["sep"] != "" && tcfg != nil {
		content["eos"] = content["sep"]
	}
	if len(tf.PostProcessor) > 0 && string(tf.PostProcessor) != "null" {
		var pp postProcessor
		if err := json.Unmarshal(tf.PostProcessor, &pp); err != nil {
			return fmt.Errorf("tokenizer.json: field \"post_processor\": %v", err)
		}
		procs := pp.Processors
		if pp.Type != "Sequence" {
			procs = []postProcessor{pp}
		}
		for _, p := range procs {
			if p.Type != "TemplateProcessing" {
				continue
			}
			if err := v.readTemplateProcessing(p, content, tcfg != nil); err != nil {
				return err
			}
		}
	}
	if tcfg != nil {
		for _, s := range specialTypes {
			var add bool
			if raw, ok := tcfg["add_"+s.typ+"_token"]; ok && json.Unmarshal(raw, &add) == nil {
				v.add[s.typ] = add
			}
			if c := content[s.typ]; c != "" {
				for _, a := range tf.AddedTokens {
					if a.Content == c {
						v.setID(s.typ, a.ID)
						break
					}
				}
			}
		}
	}
	for _, s := range specialTypes {
		var id int
		if raw, ok := fields[s.typ+"_token_id"]; ok && json.Unmarshal(raw, &id) == nil {
			v.setID(s.typ, id)
		}
	}
	for _, s := range specialTypes {
		if id, ok := v.ids[s.typ]; ok && int(id) >= len(v.tokens) {
			return fmt.Errorf("%s / config.json: %s token id %d is outside the vocabulary (%d tokens)", tcPath, s.typ, id, len(v.tokens))
		}
	}
	return nil
}

// setID records a special token id unless the type already has one (the first source wins).
func (v *vocab) setID(typ string, id int) {
	if _, set := v.ids[typ]; !set && id >= 0 {
		v.ids[typ] = uint32(id)
	}
}

// readTemplateProcessing reads whether a TemplateProcessing post-processor adds BOS, EOS or a
// separator, as SpecialVocab's parse of simple templates does. A template that ends with a
// special token other than eos_token is refused: the converter would make that token the EOS.
func (v *vocab) readTemplateProcessing(p postProcessor, content map[string]string, haveConfig bool) error {
	var first, last string
	if len(p.Single) > 1 {
		if first = p.Single[0].special(); first != "" {
			switch {
			case !haveConfig:
				content["bos"] = first
			case first != content["bos"] && first != content["cls"]:
				// The leading token becomes bos_token (and cls_token) where those are unset.
				if content["bos"] == "" {
					content["bos"] = first
				}
				if content["cls"] == "" {
					content["cls"] = first
				}
			}
			v.add["bos"] = first == content["bos"] || first == content["cls"]
		}
		if last = p.Single[len(p.Single)-1].special(); last != "" {
			switch {
			case !haveConfig:
				content["eos"] = last
			case last != content["eos"]:
				return fmt.Errorf("tokenizer.json: field \"post_processor\": the template ends with %q, not eos_token %q; mkgguf does not convert that", last, content["eos"])
			}
			v.add["eos"] = true
		}
	}
	pair := p.Pair
	if len(pair) == 0 {
		return nil
	}
	if first != "" && pair[0].special() == first {
		pair = pair[1:]
	}
	if last != "" && len(pair) > 0 && pair[len(pair)-1].special() == last {
		pair = pair[:len(pair)-1]
	}
	if len(pair) < 3 || pair[0].sequence() != "A" || pair[len(pair)-1].sequence() != "B" {
		return nil
	}
	mid := pair[1 : len(pair)-1]
	isSep := func(s string) bool { return s != "" && (s == content["sep"] || s == content["eos"]) }
	addSep := isSep(mid[0].special()) && last == ""
	if len(mid) == 2 && isSep(mid[1].special()) {
		addSep = true
	}
	v.add["sep"] = addSep
	if addSep && content["sep"] == "" && haveConfig {
		content["sep"] = content["eos"]
	}
	return nil
}

// readTemplates returns the chat templates: tokenizer_config.json's chat_template (a string, or
// a list of {"name", "template"}), else chat_template.jinja, else chat_template.json's.
func readTemplates(dir string, tcfg map[string]json.RawMessage, tcPath string) ([]namedTemplate, error) {
	if tcfg == nil {
		return nil, nil // the converter reads templates only beside a tokenizer_config.json
	}
	raw, ok := tcfg["chat_template"]
	file := tcPath
	if !ok {
		jinja, err := regfile.ReadFile(filepath.Join(dir, "chat_template.jinja"))
		switch {
		case err == nil:
			if !utf8.Valid(jinja) {
				return nil, fmt.Errorf("%s: not valid UTF-8", filepath.Join(dir, "chat_template.jinja"))
			}
			return []namedTemplate{{"default", string(jinja)}}, nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
		file = filepath.Join(dir, "chat_template.json")
		js, err := regfile.ReadFile(file)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, nil
		case err != nil:
			return nil, err
		}
		var alt struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
		}
		if err := json.Unmarshal(js, &alt); err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		raw = alt.ChatTemplate
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []namedTemplate{{"default", one}}, nil
	}
	var list []struct {
		Name     string  `json:"name"`
		Template *string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%s: field \"chat_template\": expected a string or a list of {\"name\", \"template\"}", file)
	}
	var out []namedTemplate
	var named []namedTemplate
	for _, t := range list {
		// The converter keeps names to letters, digits and "_" (they become part of a key).
		name := strings.Map(func(r rune) rune {
			if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return r
			}
			return '_'
		}, t.Name)
		switch {
		case name == "" || t.Template == nil:
		case name == "default":
			out = append(out, namedTemplate{name, *t.Template})
		default:
			named = append(named, namedTemplate{name, *t.Template})
		}
	}
	sort.Slice(named, func(i, j int) bool { return named[i].name < named[j].name })
	return append(out, named...), nil
}

// kvs returns the tokenizer keys in the converter's order.
func (v *vocab) kvs() []gguf.KV {
	kvs := []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.String("gpt2")},
		{Key: "tokenizer.ggml.pre", Value: gguf.String(v.pre)},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Strings(v.tokens)},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Int32s(v.types)},
		{Key: "tokenizer.ggml.merges", Value: gguf.Strings(v.merges)},
	}
	for _, s := range specialTypes {
		if id, ok := v.ids[s.typ]; ok && s.key != "" {
			kvs = append(kvs, gguf.KV{Key: s.key, Value: gguf.Uint32(id)})
		}
	}
	if v.spacePrefix != nil {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.add_space_prefix", Value: gguf.Bool(*v.spacePrefix)})
	}
	for _, typ := range []string{"bos", "eos", "sep"} {
		if add, ok := v.add[typ]; ok {
			kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.add_" + typ + "_token", Value: gguf.Bool(add)})
		}
	}
	var names []string
	for _, t := range v.templates {
		if t.name == "default" {
			kvs = append(kvs, gguf.KV{Key: "tokenizer.chat_template", Value: gguf.String(t.text)})
			continue
		}
		names = append(names, t.name)
		kvs = append(kvs, gguf.KV{Key: "tokenizer.chat_template." + t.name, Value: gguf.String(t.text)})
	}
	if len(names) > 0 {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.chat_templates", Value: gguf.Strings(names)})
	}
	return kvs
}
