package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Reading tokenizer_config.json: chat templates and the special tokens templates see.

// readConfig takes the chat template(s) and the special tokens from tokenizer_config.json.
func (b *builder) readConfig(data []byte) error {
	b.bos, b.eos, b.pad, b.unk = noID, noID, noID, noID
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(data, &cfg); err != nil {
		return cfgErr("", "not a JSON object: %v", err)
	}
	if raw, ok := cfg["chat_template"]; ok && string(raw) != "null" {
		var one string
		if err := json.Unmarshal(raw, &one); err == nil {
			b.templates = []namedText{{"default", one}}
		} else {
			var many []struct {
				Name     string `json:"name"`
				Template string `json:"template"`
			}
			if err := json.Unmarshal(raw, &many); err != nil {
				return cfgErr("chat_template", "neither a string nor a list of {name, template}: %v", err)
			}
			for _, m := range many {
				b.templates = append(b.templates, namedText{m.Name, m.Template})
			}
		}
	}
	// transformers passes special_tokens_map to the template: each attribute that is set.
	for _, name := range []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"} {
		raw, ok := cfg[name]
		if !ok || string(raw) == "null" {
			continue
		}
		tok, err := tokenString(raw)
		if err != nil {
			return cfgErr(name, "%v", err)
		}
		b.vars = append(b.vars, templateVar{name: name, value: tok})
		id, found := b.tokenID(tok)
		if !found {
			continue
		}
		switch name {
		case "bos_token":
			b.bos = id
		case "eos_token":
			b.eos = id
		case "pad_token":
			b.pad = id
		case "unk_token":
			b.unk = id
		}
	}
	if raw, ok := cfg["additional_special_tokens"]; ok && string(raw) != "null" {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return cfgErr("additional_special_tokens", "not a list: %v", err)
		}
		for i, r := range list {
			tok, err := tokenString(r)
			if err != nil {
				return cfgErr(fmt.Sprintf("additional_special_tokens[%d]", i), "%v", err)
			}
			b.vars = append(b.vars, templateVar{name: "additional_special_tokens", value: tok, list: true})
		}
	}
	for _, v := range b.vars {
		if !utf8Valid(v.value) {
			return cfgErr(v.name, "not valid UTF-8")
		}
	}
	return nil
}

// tokenString accepts "text" or an AddedToken object {"content": "text", ...}.
func tokenString(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", errors.New("expected a string or an object with \"content\"")
	}
	return *obj.Content, nil
}

// tokenID is HF's token_to_id: added vocabulary first, then the model vocab.
func (b *builder) tokenID(tok string) (uint32, bool) {
	if id, ok := b.addedMap[tok]; ok {
		return id, true
	}
	id, ok := b.vocab[tok]
	return id, ok
}
