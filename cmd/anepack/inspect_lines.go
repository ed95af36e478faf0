package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/cli"
)

// writeLines prints a labelled block: the label on the first line, the others indented to
// match, as inspect's other fields are.
func writeLines(w io.Writer, label string, lines []string) {
	for i, l := range lines {
		if i == 0 {
			fmt.Fprintf(w, "%-11s %s\n", label, l)
		} else {
			fmt.Fprintf(w, "%-11s %s\n", "", l)
		}
	}
}

// tokenizerLines renders the tokenizer's summary (the tokenizer package's Info, stored as JSON)
// as sentences: the model and its sizes, the pipeline, the special tokens, the chat templates.
// Keys it does not know are listed last as they are, so a newer summary loses nothing.
func tokenizerLines(raw json.RawMessage) []string {
	var info map[string]any
	if json.Unmarshal(raw, &info) != nil {
		return []string{cli.Printable(string(raw))}
	}
	used := map[string]bool{}
	get := func(k string) (any, bool) {
		v, ok := info[k]
		if ok {
			used[k] = true
		}
		return v, ok
	}
	str := func(k string) string {
		if v, ok := get(k); ok && v != nil {
			return plain(v)
		}
		return ""
	}
	var lines []string
	// The model and its sizes.
	head := str("model_type")
	if head == "" {
		head = "tokenizer"
	}
	var sizes []string
	if v := str("vocab_size"); v != "" {
		sizes = append(sizes, v+" tokens")
	}
	if v := str("model_vocab_size"); v != "" {
		sizes = append(sizes, v+" in the model's vocabulary")
	}
	if v := str("added_tokens"); v != "" {
		sizes = append(sizes, v+" added")
	}
	if v := str("special_tokens"); v != "" {
		sizes = append(sizes, v+" special")
	}
	if v := str("merges"); v != "" {
		sizes = append(sizes, v+" merges")
	}
	if len(sizes) > 0 {
		head += ": " + strings.Join(sizes, ", ")
	}
	lines = append(lines, head)
	// The pipeline, in the order text goes through it.
	var steps []string
	for _, k := range []struct{ key, name string }{{"normalizer", "normalizer"}, {"pre_tokenizer", "pre-tokenizer"}, {"post_processor", "post-processor"}, {"decoder", "decoder"}} {
		if v := str(k.key); v != "" {
			steps = append(steps, k.name+" "+v)
		}
	}
	if v, ok := get("ignore_merges"); ok && v == true {
		steps = append(steps, "ignore_merges")
	}
	if len(steps) > 0 {
		lines = append(lines, strings.Join(steps, ", "))
	}
	// Special tokens: {"id": N, "text": "..."} objects.
	var specials []string
	for _, k := range []string{"bos", "eos", "pad", "unk"} {
		v, ok := get(k)
		if !ok {
			continue
		}
		if t, ok := v.(map[string]any); ok {
			specials = append(specials, fmt.Sprintf("%s %s (%s)", k, plain(t["text"]), plain(t["id"])))
		} else if v != nil {
			specials = append(specials, k+" "+plain(v))
		}
	}
	if len(specials) > 0 {
		lines = append(lines, strings.Join(specials, ", "))
	}
	// Chat templates.
	chat := "no chat template (prompts are continued as plain text)"
	if v, ok := get("has_chat_template"); ok && v == true {
		chat = "chat template"
	}
	if v, ok := get("chat_templates"); ok {
		if list, ok := v.([]any); ok && len(list) > 0 {
			var names []string
			for _, n := range list {
				names = append(names, plain(n))
			}
			chat = "chat templates: " + strings.Join(names, ", ")
		}
	}
	if v := str("builtin_chat_template"); v != "" {
		chat += " (anepack's built-in " + v + " template: the checkpoint has none)"
	}
	lines = append(lines, chat)
	// The compiled tables.
	var tables []string
	if v := str("format"); v != "" {
		tables = append(tables, v)
	}
	if v := str("format_version"); v != "" {
		tables = append(tables, "version "+v)
	}
	if v, ok := get("tables_bytes"); ok {
		if n, ok := v.(float64); ok {
			tables = append(tables, fmt.Sprintf("%d bytes", int64(n)))
		}
	}
	if v := str("tables_crc32c"); v != "" {
		tables = append(tables, "crc32c "+v)
	}
	if len(tables) > 0 {
		lines = append(lines, "tables: "+strings.Join(tables, ", "))
	}
	var rest []string
	for k, v := range info {
		if !used[k] {
			rest = append(rest, cli.Printable(k)+" "+plain(v))
		}
	}
	sort.Strings(rest)
	if len(rest) > 0 {
		lines = append(lines, strings.Join(rest, ", "))
	}
	return lines
}

// generationLines renders the generation defaults: the token ids, then the sampling settings
// anerun starts from (greedy when the model sets none).
func generationLines(g format.Generation) []string {
	var ids []string
	if g.BOSTokenID != nil {
		ids = append(ids, "bos "+strconv.Itoa(*g.BOSTokenID))
	}
	if len(g.EOSTokenIDs) > 0 {
		var e []string
		for _, id := range g.EOSTokenIDs {
			e = append(e, strconv.Itoa(id))
		}
		ids = append(ids, "eos "+strings.Join(e, ", "))
	}
	if g.PadTokenID != nil {
		ids = append(ids, "pad "+strconv.Itoa(*g.PadTokenID))
	}
	var sampling []string
	if g.DoSample != nil {
		if *g.DoSample {
			sampling = append(sampling, "sampling")
		} else {
			sampling = append(sampling, "greedy (do_sample false)")
		}
	}
	f := func(name string, v *float64) {
		if v != nil {
			sampling = append(sampling, name+" "+strconv.FormatFloat(*v, 'g', -1, 64))
		}
	}
	f("temperature", g.Temperature)
	if g.TopK != nil {
		sampling = append(sampling, "top-k "+strconv.Itoa(*g.TopK))
	}
	f("top-p", g.TopP)
	f("min-p", g.MinP)
	f("repetition penalty", g.RepetitionPenalty)
	if g.MaxNewTokens != nil {
		sampling = append(sampling, "max new tokens "+strconv.Itoa(*g.MaxNewTokens))
	}
	if len(sampling) == 0 {
		sampling = append(sampling, "no sampling settings: anerun decodes greedily unless told otherwise")
	}
	var lines []string
	if len(ids) > 0 {
		lines = append(lines, "token ids: "+strings.Join(ids, ", "))
	}
	return append(lines, strings.Join(sampling, ", "))
}

// plain renders a JSON value without quotes around strings and without exponents for numbers,
// its control characters escaped (a bundle's tokenizer summary is its maker's text).
func plain(v any) string {
	switch x := v.(type) {
	case string:
		return cli.Printable(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return "none"
	}
	b, _ := json.Marshal(v)
	return cli.Printable(string(b))
}
