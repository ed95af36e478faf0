package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anepack/anepack/tokenizer/internal/jinja"
)

// Message is one chat message. Role and Content become the "role" and "content" keys; Extra
// holds any further keys in order ("reasoning_content", "tool_calls", "name", ...). Content may
// be a string or a list of content parts (for example []*Object); nil leaves "content" out.
type Message struct {
	Role    string
	Content any
	Extra   *Object
}

// ChatOptions are the arguments of transformers' apply_chat_template(tokenize=False).
type ChatOptions struct {
	// AddGenerationPrompt appends the assistant header so the model answers next.
	AddGenerationPrompt bool
	// ContinueFinalMessage cuts the prompt right after the final message's content, so the model
	// continues it (transformers' continue_final_message); it excludes AddGenerationPrompt.
	ContinueFinalMessage bool
	// Tools are JSON schemas of the callable tools (passed as `tools`; None when nil).
	Tools []*Object
	// Documents are retrieval documents (passed as `documents`; None when nil).
	Documents []*Object
	// EnableThinking, when set, is passed as `enable_thinking` (Qwen3 templates read it).
	EnableThinking *bool
	// Vars are further template variables; they override the special-token variables.
	// Values may be anything that converts to JSON; Go maps are passed with sorted keys, so use
	// *Object where key order matters.
	Vars map[string]any
	// Template selects a named template when tokenizer_config.json has several; "" picks
	// "tool_use" when Tools is set and it exists, else "default", as transformers does.
	Template string
	// Now is the clock behind strftime_now (time.Now when nil).
	Now func() time.Time
	// Limits bound the rendering: the template comes from the model, so it may be hostile.
	Limits TemplateLimits
	// Usage, when not nil, receives what the rendering spent of those limits.
	Usage *TemplateUsage
}

// TemplateLimits bound one chat template rendering, so that a hostile template fails with an
// error instead of exhausting memory or time. A zero field takes the default.
type TemplateLimits struct {
	// MaxSteps bounds the statements executed, expressions evaluated, loop iterations and macro
	// calls (default 1,000,000 plus 100 per message field: about a second at worst; real templates take 20 to 70 per message).
	MaxSteps int64
	// MaxBytes bounds the output and any one string or list built on the way (default 8 MiB
	// plus twice the size of the conversation).
	MaxBytes int64
	// MaxAlloc bounds the bytes allocated or read through while rendering (default 64 MiB plus
	// 16 times the size of the conversation).
	MaxAlloc int64
}

// TemplateUsage is what one rendering spent.
type TemplateUsage struct {
	Steps int64 // statements, expressions, loop iterations and macro calls
	Bytes int64 // bytes allocated or read through
}

// chatCache holds parsed templates per name, parsed on first use.
type chatCache struct {
	mu    sync.Mutex
	tmpls map[string]parsed
}

type parsed struct {
	t   *jinja.Template
	err error
}

// HasChatTemplate reports whether the tokenizer has a chat template (GPT-2's, for one, has none:
// such a model only continues text).
func (tk *Tokenizer) HasChatTemplate() bool { return len(tk.t.templates) > 0 }

// ErrNoChatTemplate is returned when tokenizer_config.json had no chat_template.
var ErrNoChatTemplate = errors.New("tokenizer has no chat template (tokenizer_config.json has no chat_template)")

// ApplyChatTemplate renders the model's chat template for messages exactly as transformers'
// apply_chat_template(messages, tools=..., add_generation_prompt=..., tokenize=False, **vars):
// the template sees messages, tools, documents, add_generation_prompt, the special tokens of
// tokenizer_config.json (bos_token, eos_token, ...) and the extra variables.
func (tk *Tokenizer) ApplyChatTemplate(messages []Message, opts ChatOptions) (string, error) {
	msgs := make(jinja.List, len(messages))
	for i, m := range messages {
		d := jinja.NewDict()
		_ = d.Set("role", m.Role)
		if m.Content != nil {
			v, err := toValue(m.Content)
			if err != nil {
				return "", fmt.Errorf("messages[%d].content: %w", i, err)
			}
			_ = d.Set("content", v)
		}
		for _, k := range m.Extra.Keys() {
			v, err := toValue(m.Extra.vals[k])
			if err != nil {
				return "", fmt.Errorf("messages[%d].%s: %w", i, k, err)
			}
			_ = d.Set(k, v)
		}
		msgs[i] = d
	}
	vars := map[string]jinja.Value{}
	if opts.Tools != nil {
		v, err := toValue(opts.Tools)
		if err != nil {
			return "", fmt.Errorf("tools: %w", err)
		}
		vars["tools"] = v
	}
	if opts.Documents != nil {
		v, err := toValue(opts.Documents)
		if err != nil {
			return "", fmt.Errorf("documents: %w", err)
		}
		vars["documents"] = v
	}
	if opts.EnableThinking != nil {
		vars["enable_thinking"] = *opts.EnableThinking
	}
	for k, x := range opts.Vars {
		v, err := toValue(x)
		if err != nil {
			return "", fmt.Errorf("variable %s: %w", k, err)
		}
		vars[k] = v
	}
	return tk.renderChat(msgs, vars, opts)
}

// ApplyChatTemplateJSON renders a request given as one JSON object, the input of
// `anerun template`: {"messages": [...], "tools": [...], "documents": [...],
// "add_generation_prompt": true, "continue_final_message": false, "chat_template": "name",
// ...}. Every other key (such as "enable_thinking") becomes a template variable. Key order
// inside messages and tools is kept.
func (tk *Tokenizer) ApplyChatTemplateJSON(request []byte) (string, error) {
	v, err := jinja.ParseJSON(request)
	if err != nil {
		return "", fmt.Errorf("chat request: %w", err)
	}
	req, ok := v.(*jinja.Dict)
	if !ok {
		return "", errors.New("chat request: expected a JSON object")
	}
	var opts ChatOptions
	vars := map[string]jinja.Value{}
	var msgs jinja.List
	for i, k := range req.Keys() {
		key, val := k.(string), req.Values()[i]
		switch key {
		case "messages":
			l, ok := val.(jinja.List)
			if !ok {
				return "", errors.New("chat request: messages must be a list")
			}
			msgs = l
		case "add_generation_prompt", "continue_final_message":
			b, ok := val.(bool)
			if !ok {
				return "", fmt.Errorf("chat request: %s must be true or false", key)
			}
			if key == "add_generation_prompt" {
				opts.AddGenerationPrompt = b
			} else {
				opts.ContinueFinalMessage = b
			}
		case "chat_template":
			s, ok := val.(string)
			if !ok {
				return "", errors.New("chat request: chat_template must be a template name")
			}
			opts.Template = s
		case "tools", "documents":
			if val != nil {
				vars[key] = val
			}
		default:
			vars[key] = val
		}
	}
	if msgs == nil {
		return "", errors.New("chat request: messages missing")
	}
	if _, ok := vars["tools"]; ok {
		opts.Tools = []*Object{} // marks "tools given" for template selection
	}
	return tk.renderChat(msgs, vars, opts)
}

func (tk *Tokenizer) renderChat(msgs jinja.List, extra map[string]jinja.Value, opts ChatOptions) (string, error) {
	if opts.ContinueFinalMessage && opts.AddGenerationPrompt {
		return "", errors.New("continue_final_message and add_generation_prompt are not compatible")
	}
	tmpl, err := tk.chatTemplate(opts.Template, opts.Tools != nil)
	if err != nil {
		return "", err
	}
	ctx := map[string]jinja.Value{}
	// transformers: render(messages=..., tools=..., documents=..., add_generation_prompt=...,
	// **special_tokens_map, **kwargs).
	for _, v := range tk.t.vars {
		if v.list {
			l, _ := ctx[v.name].(jinja.List)
			ctx[v.name] = append(l, v.value)
		} else {
			ctx[v.name] = v.value
		}
	}
	for k, v := range extra {
		ctx[k] = v
	}
	ctx["messages"] = msgs
	ctx["add_generation_prompt"] = opts.AddGenerationPrompt
	if _, ok := ctx["tools"]; !ok {
		ctx["tools"] = nil
	}
	if _, ok := ctx["documents"]; !ok {
		ctx["documents"] = nil
	}
	var used jinja.Usage
	out, err := tmpl.Render(ctx, jinja.RenderOptions{Now: opts.Now, MaxSteps: opts.Limits.MaxSteps,
		MaxBytes: opts.Limits.MaxBytes, MaxAlloc: opts.Limits.MaxAlloc, Usage: &used})
	if opts.Usage != nil {
		*opts.Usage = TemplateUsage(used)
	}
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	if opts.ContinueFinalMessage {
		return continueFinal(out, msgs)
	}
	return out, nil
}

// continueFinal cuts the rendering after the final message's content, as transformers does.
func continueFinal(rendered string, msgs jinja.List) (string, error) {
	if len(msgs) == 0 {
		return "", errors.New("continue_final_message needs at least one message")
	}
	last, _ := msgs[len(msgs)-1].(*jinja.Dict)
	var content string
	if last != nil {
		c, _ := last.Get("content")
		switch x := c.(type) {
		case string:
			content = x
		case jinja.List:
			found := false
			for i := len(x) - 1; i >= 0 && !found; i-- {
				if part, ok := x[i].(*jinja.Dict); ok {
					if t, ok := part.Get("text"); ok {
						content, found = jinja.Str(t), true
					}
				}
			}
			if !found {
				return "", errors.New("continue_final_message is set but we could not find any text to continue in the final message")
			}
		}
	}
	stripped := strings.TrimFunc(content, isPySpace)
	i := strings.LastIndex(rendered, stripped)
	if i < 0 {
		return "", errors.New("continue_final_message is set but the final message does not appear in the chat after applying the chat template")
	}
	lstripped := strings.TrimLeftFunc(content, isPySpace)
	if strings.HasPrefix(rendered[i:], lstripped) {
		return rendered[:i+len(lstripped)], nil
	}
	return rendered[:i+len(stripped)], nil
}

func isPySpace(r rune) bool {
	return r == ' ' || (r >= '\t' && r <= '\r') || (r >= 0x1c && r <= 0x1f) || r == 0x85 || r == 0xa0 || r == 0x1680 || (r >= 0x2000 && r <= 0x200a) || r == 0x2028 || r == 0x2029 || r == 0x202f || r == 0x205f || r == 0x3000
}

// chatTemplate returns the parsed template to use, selecting by name as transformers'
// get_chat_template does.
func (tk *Tokenizer) chatTemplate(name string, haveTools bool) (*jinja.Template, error) {
	ts := tk.t.templates
	if len(ts) == 0 {
		return nil, ErrNoChatTemplate
	}
	text, chosen := "", ""
	find := func(n string) bool {
		for _, t := range ts {
			if t.name == n {
				text, chosen = t.text, n
				return true
			}
		}
		return false
	}
	switch {
	case name != "":
		if !find(name) {
			return nil, fmt.Errorf("chat template %q not found (have %s)", name, strings.Join(tk.Info().ChatTemplates, ", "))
		}
	case len(ts) == 1 && ts[0].name == "default":
		text, chosen = ts[0].text, "default"
	case haveTools && find("tool_use"):
	case find("default"):
	default:
		return nil, fmt.Errorf("no default chat template among %s; pass ChatOptions.Template", strings.Join(tk.Info().ChatTemplates, ", "))
	}
	return tk.parsedTemplate(chosen, text)
}

// parsedTemplate parses a template once per Tokenizer (errors are remembered too).
func (tk *Tokenizer) parsedTemplate(name, text string) (*jinja.Template, error) {
	tk.chat.mu.Lock()
	defer tk.chat.mu.Unlock()
	if e, ok := tk.chat.tmpls[name]; ok {
		return e.t, e.err
	}
	t, err := jinja.Parse(text)
	if err != nil {
		err = fmt.Errorf("chat template %q: %w", name, err)
	}
	if tk.chat.tmpls == nil {
		tk.chat.tmpls = map[string]parsed{}
	}
	tk.chat.tmpls[name] = parsed{t, err}
	return t, err
}

// toValue converts Go data into template values, keeping *Object key order.
func toValue(x any) (jinja.Value, error) {
	switch v := x.(type) {
	case nil:
		return nil, nil
	case *jinja.Dict, jinja.List, jinja.Tuple:
		return v, nil
	case bool, string, int64, float64:
		return v, nil
	case json.Number:
		return jinja.NumberValue(string(v))
	case json.RawMessage:
		return jinja.ParseJSON(v)
	case *Object:
		d := jinja.NewDict()
		for _, k := range v.Keys() {
			e, err := toValue(v.vals[k])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			_ = d.Set(k, e)
		}
		return d, nil
	case Object:
		return toValue(&v)
	case Message:
		d := jinja.NewDict()
		_ = d.Set("role", v.Role)
		if v.Content != nil {
			c, err := toValue(v.Content)
			if err != nil {
				return nil, err
			}
			_ = d.Set("content", c)
		}
		for _, k := range v.Extra.Keys() {
			e, err := toValue(v.Extra.vals[k])
			if err != nil {
				return nil, err
			}
			_ = d.Set(k, e)
		}
		return d, nil
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if rv.Uint() > 1<<63-1 {
			return nil, fmt.Errorf("integer %d does not fit in 64 bits", rv.Uint())
		}
		return int64(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.String:
		return rv.String(), nil
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil, nil
		}
		out := make(jinja.List, rv.Len())
		for i := range out {
			e, err := toValue(rv.Index(i).Interface())
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = e
		}
		return out, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			break
		}
		keys := make([]string, 0, rv.Len())
		for _, k := range rv.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		d := jinja.NewDict()
		for _, k := range keys {
			e, err := toValue(rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key())).Interface())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			_ = d.Set(k, e)
		}
		return d, nil
	case reflect.Pointer:
		if rv.IsNil() {
			return nil, nil
		}
	}
	// Structs and anything else: through encoding/json, which keeps struct field order.
	b, err := json.Marshal(x)
	if err != nil {
		return nil, fmt.Errorf("cannot pass %T to a template: %w", x, err)
	}
	return jinja.ParseJSON(b)
}
