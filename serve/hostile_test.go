package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
)

// TestHalfClosedClient sends a non-streaming request on a raw TCP connection and half-closes it
// (shutdown(SHUT_WR)) at once, as `nc -N` and some proxies do. Go's server takes the EOF for a
// client that went away and cancels the generation; the server used to answer that with
// "200 OK" and an empty body. Now the connection is closed with no status at all (or, should
// the generation win the race, with the complete answer): never an empty success.
func TestHalfClosedClient(t *testing.T) {
	ts := startServer(t, Config{})
	for _, stream := range []bool{false, true} {
		body, _ := json.Marshal(map[string]any{"model": ts.ModelID(), "max_tokens": 200, "stream": stream,
			"messages": []map[string]string{{"role": "user", "content": "Tell me a long story."}}})
		conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		raw, err := io.ReadAll(conn)
		conn.Close()
		if err != nil {
			t.Fatalf("stream %v: reading the answer: %v", stream, err)
		}
		if len(raw) == 0 {
			continue // closed without a status: the client knows the request failed
		}
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(raw))), nil)
		if err != nil {
			t.Fatalf("stream %v: unparsable answer %q: %v", stream, raw, err)
		}
		data, err := io.ReadAll(resp.Body)
		switch {
		case resp.StatusCode != http.StatusOK:
		case stream && err != nil:
			// The stream had begun; cutting it without its final chunk is how the client
			// learns it failed.
		case stream && !strings.Contains(string(data), "data: [DONE]"):
			t.Fatalf("stream: 200 OK and a clean end without [DONE]: %q", data)
		case !stream:
			var c chatCompletion
			if err := json.Unmarshal(data, &c); err != nil || len(c.Choices) != 1 {
				t.Fatalf("200 OK with %q (%v): an empty success for a request that was cancelled", data, err)
			}
		}
	}
	// The server is still up.
	if resp, data := ts.do(t, http.MethodGet, "/health", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("/health after half-closed clients: %d %s", resp.StatusCode, data)
	}
}

// hostileTemplate chooses, by the first message, one of the attacks that used to kill the
// server (a panic in strings.Repeat) or exhaust its memory or CPU.
const hostileTemplate = `{%- set a = messages[0]['content'] %}` +
	`{%- if a == 'repeat' %}{{ "ab" * 2**62 }}` +
	`{%- elif a == 'indent' %}{{ "x"|indent(10000000000) }}` +
	`{%- elif a == 'center' %}{{ "x"|center(10000000000) }}` +
	`{%- elif a == 'list' %}{{ [1, 2] * 2**62 }}` +
	`{%- elif a == 'double' %}{% set ns = namespace(s="x") %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}` +
	`{%- elif a == 'spin' %}{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}` +
	`{%- elif a == 'cycle' %}{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}` +
	`{%- else %}{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{% endfor %}{{ '<|im_start|>assistant\n' }}` +
	`{%- endif %}`

// TestHostileTemplateKeepsServing serves a bundle whose chat template attacks the server: each
// attack is refused with a 400 naming the limit, within seconds, and /health answers after
// every one. Before the template budgets, the first request killed the process.
func TestHostileTemplateKeepsServing(t *testing.T) {
	path, err := buildBundle(testDir, "hostile-template", func(files map[string][]byte) error {
		var cfg map[string]any
		if err := json.Unmarshal(files["tokenizer_config.json"], &cfg); err != nil {
			return err
		}
		cfg["chat_template"] = hostileTemplate
		b, err := json.Marshal(cfg)
		files["tokenizer_config.json"] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := runtime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := cpu.New(m, cpu.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ts := startServer(t, Config{Model: m, Backend: b})
	for attack, limit := range map[string]string{
		"repeat": "MaxBytes", "indent": "MaxBytes", "center": "MaxBytes", "list": "MaxBytes",
		"double": "MaxBytes", "spin": "MaxSteps", "cycle": "RecursionError",
	} {
		start := time.Now()
		resp, data := ts.do(t, http.MethodPost, "/v1/chat/completions", map[string]any{"model": ts.ModelID(), "max_tokens": 2,
			"messages": []map[string]string{{"role": "user", "content": attack}}})
		checkError(t, resp, data, 400, "messages", "invalid_value")
		if !strings.Contains(string(data), limit) {
			t.Errorf("%s: %s does not name %s", attack, data, limit)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s: refused after %v", attack, took)
		}
		if resp, data := ts.do(t, http.MethodGet, "/health", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("/health after %s: %d %s", attack, resp.StatusCode, data)
		}
	}
	var got chatCompletion
	ts.post(t, "/v1/chat/completions", map[string]any{"model": ts.ModelID(), "max_tokens": 2,
		"messages": []map[string]string{{"role": "user", "content": "Hi"}}}, &got)
	if len(got.Choices) != 1 {
		t.Fatalf("an ordinary conversation after the attacks: %+v", got)
	}
}

// TestHostileSchemas sends schemas and tools made to cost the server: deep nesting, huge enums,
// too many properties or tools, self-reference without nesting, a wide anyOf. Each is refused
// with a 400 naming the parameter, or (the wide anyOf, whose alternatives followed at once are
// bounded) answered; the server keeps serving.
func TestHostileSchemas(t *testing.T) {
	ts := startServer(t, Config{})
	chat := func(extra map[string]any) map[string]any {
		body := map[string]any{"model": ts.ModelID(), "max_tokens": 8, "messages": []map[string]any{{"role": "user", "content": "x"}}}
		for k, v := range extra {
			body[k] = v
		}
		return body
	}
	schema := func(s string) map[string]any {
		return chat(map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "h", "schema": json.RawMessage(s)}}})
	}
	deep := strings.Repeat(`{"type":"array","items":`, 200) + `{}` + strings.Repeat(`}`, 200)
	var enum []string
	for i := range 5000 {
		enum = append(enum, fmt.Sprint(i))
	}
	var props []string
	for i := range 65 {
		props = append(props, fmt.Sprintf(`"p%d":{}`, i))
	}
	var tools []map[string]any
	for i := range 129 {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": fmt.Sprint("f", i)}})
	}
	for _, c := range []struct {
		name        string
		body        map[string]any
		param, code string
	}{
		{"deep", schema(deep), "response_format", "invalid_value"},
		{"huge enum", schema(`{"enum":[` + strings.Join(enum, ",") + `]}`), "response_format", "unsupported_value"},
		{"many properties", schema(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`), "response_format", "unsupported_value"},
		{"self without nesting", schema(`{"anyOf":[{"$ref":"#"},{"type":"null"}]}`), "response_format", "invalid_value"},
		{"ref cycle", schema(`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`), "response_format", "unsupported_value"},
		{"too many tools", chat(map[string]any{"tools": tools}), "tools", "invalid_value"},
		{"deep tool", chat(map[string]any{"tool_choice": "required", "tools": []map[string]any{{"type": "function",
			"function": map[string]any{"name": "f", "parameters": json.RawMessage(deep)}}}}), "tools[0].function.parameters", "invalid_value"},
	} {
		resp, data := ts.do(t, http.MethodPost, "/v1/chat/completions", c.body)
		checkError(t, resp, data, 400, c.param, c.code)
	}
	var alts []string
	for i := range 1000 {
		alts = append(alts, fmt.Sprintf(`{"type":"object","properties":{"k":{"const":%d}},"required":["k"],"additionalProperties":false}`, i))
	}
	// Answered (within the client's timeout): what it costs per token is BenchmarkMaskHostileAnyOf's.
	var got chatCompletion
	ts.post(t, "/v1/chat/completions", schema(`{"anyOf":[`+strings.Join(alts, ",")+`]}`), &got)
	// An array of an anyOf over 19,000 consts (320 KB): one literal of 19,000 texts.
	consts := make([]string, 19000)
	for i := range consts {
		consts[i] = fmt.Sprintf(`{"const":"w%d"}`, i)
	}
	ts.post(t, "/v1/chat/completions", schema(`{"type":"array","items":{"anyOf":[`+strings.Join(consts, ",")+`]}}`), &got)
	if text := deref(got.Choices[0].Message.Content); !strings.HasPrefix(text, `[`) {
		t.Fatalf("the wide anyOf of consts: %q", text)
	}
	ts.post(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": "still here", "max_tokens": 2}, &got)
}
