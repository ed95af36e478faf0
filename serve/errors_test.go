package serve

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// checkError checks an OpenAI-shaped error answer: status, and error.param and error.code
// (empty means JSON null), with a message and a type.
func checkError(t *testing.T, resp *http.Response, data []byte, status int, param, code string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d; want %d: %s", resp.StatusCode, status, data)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var body struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &body); err != nil || body.Error == nil {
		t.Fatalf("not an OpenAI error: %s", data)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := body.Error[k]; !ok {
			t.Fatalf("error lacks %q: %s", k, data)
		}
	}
	var msg, typ string
	json.Unmarshal(body.Error["message"], &msg)
	json.Unmarshal(body.Error["type"], &typ)
	if msg == "" || typ == "" {
		t.Fatalf("error without message or type: %s", data)
	}
	for k, want := range map[string]string{"param": param, "code": code} {
		w := "null"
		if want != "" {
			w = strconv.Quote(want)
		}
		if got := string(body.Error[k]); got != w {
			t.Fatalf("error.%s = %s; want %s: %s", k, got, w, data)
		}
	}
}

func TestRequestErrors(t *testing.T) {
	ts := startServer(t, Config{})
	model := ts.ModelID()
	chat := func(extra string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]` + extra + `}`
	}
	long := strings.Repeat("hello ", 300)
	cases := []struct {
		name, path, body string
		status           int
		param, code      string
	}{
		{"bad json", "/v1/chat/completions", `{"model":`, 400, "", "invalid_json"},
		{"syntax", "/v1/chat/completions", `{"model" "x"}`, 400, "", "invalid_json"},
		{"empty body", "/v1/chat/completions", ``, 400, "", "invalid_json"},
		{"not an object", "/v1/chat/completions", `[1,2]`, 400, "", "invalid_json"},
		{"trailing data", "/v1/chat/completions", chat("") + `{}`, 400, "", "invalid_json"},
		{"wrong type", "/v1/chat/completions", chat(`,"temperature":"hot"`), 400, "temperature", "invalid_type"},
		{"stop type", "/v1/chat/completions", chat(`,"stop":5`), 400, "stop", "invalid_type"},
		{"stop array type", "/v1/chat/completions", chat(`,"stop":["a",1]`), 400, "stop", "invalid_type"},
		{"missing model", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model", "missing_required_parameter"},
		{"unknown model", "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, 404, "model", "model_not_found"},
		{"unknown model (completions)", "/v1/completions", `{"model":"gpt-4o","prompt":"hi"}`, 404, "model", "model_not_found"},
		{"n=0", "/v1/chat/completions", chat(`,"n":0`), 400, "n", "invalid_value"},
		{"n=17", "/v1/chat/completions", chat(`,"n":17`), 400, "n", "invalid_value"},
		{"temperature", "/v1/chat/completions", chat(`,"temperature":2.5`), 400, "temperature", "invalid_value"},
		{"negative temperature", "/v1/chat/completions", chat(`,"temperature":-1`), 400, "temperature", "invalid_value"},
		{"top_p 0", "/v1/chat/completions", chat(`,"top_p":0`), 400, "top_p", "invalid_value"},
		{"top_p 1.5", "/v1/chat/completions", chat(`,"top_p":1.5`), 400, "top_p", "invalid_value"},
		{"top_k", "/v1/chat/completions", chat(`,"top_k":-2`), 400, "top_k", "invalid_value"},
		{"min_p", "/v1/chat/completions", chat(`,"min_p":2`), 400, "min_p", "invalid_value"},
		{"repetition_penalty", "/v1/chat/completions", chat(`,"repetition_penalty":0`), 400, "repetition_penalty", "invalid_value"},
		{"max_tokens 0", "/v1/chat/completions", chat(`,"max_tokens":0`), 400, "max_tokens", "invalid_value"},
		{"max_completion_tokens", "/v1/chat/completions", chat(`,"max_completion_tokens":-3`), 400, "max_completion_tokens", "invalid_value"},
		{"presence_penalty range", "/v1/chat/completions", chat(`,"presence_penalty":3`), 400, "presence_penalty", "invalid_value"},
		{"frequency_penalty range", "/v1/chat/completions", chat(`,"frequency_penalty":-2.5`), 400, "frequency_penalty", "invalid_value"},
		{"logit_bias", "/v1/chat/completions", chat(`,"logit_bias":{"1":5}`), 400, "logit_bias", "unsupported_parameter"},
		{"too many stops", "/v1/chat/completions", chat(`,"stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]`), 400, "stop", "invalid_value"},
		{"stream_options without stream", "/v1/chat/completions", chat(`,"stream_options":{"include_usage":true}`), 400, "stream_options", "invalid_value"},
		{"top_logprobs range", "/v1/chat/completions", chat(`,"logprobs":true,"top_logprobs":21`), 400, "top_logprobs", "invalid_value"},
		{"top_logprobs without logprobs", "/v1/chat/completions", chat(`,"top_logprobs":2`), 400, "top_logprobs", "invalid_value"},
		{"tools type", "/v1/chat/completions", chat(`,"tools":{"type":"function"}`), 400, "tools", "invalid_type"},
		{"tool type", "/v1/chat/completions", chat(`,"tools":[{"type":"retrieval"}]`), 400, "tools[0].type", "invalid_value"},
		{"tool name", "/v1/chat/completions", chat(`,"tools":[{"type":"function","function":{"name":"a b"}}]`), 400, "tools[0].function.name", "invalid_value"},
		{"tool without name", "/v1/chat/completions", chat(`,"tools":[{"type":"function","function":{}}]`), 400, "tools[0].function.name", "missing_required_parameter"},
		{"tool twice", "/v1/chat/completions", chat(`,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]`), 400, "tools[1].function.name", "invalid_value"},
		{"tool parameters", "/v1/chat/completions", chat(`,"tools":[{"type":"function","function":{"name":"f","parameters":[1]}}]`), 400, "tools[0].function.parameters", "invalid_type"},
		{"tool schema keyword", "/v1/chat/completions", chat(`,"tool_choice":"required","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string","pattern":"x"}}}}}]`), 400, "tools[0].function.parameters", "unsupported_value"},
		{"tool_choice value", "/v1/chat/completions", chat(`,"tool_choice":"sometimes","tools":[{"type":"function","function":{"name":"f"}}]`), 400, "tool_choice", "invalid_value"},
		{"tool_choice unknown function", "/v1/chat/completions", chat(`,"tool_choice":{"type":"function","function":{"name":"g"}},"tools":[{"type":"function","function":{"name":"f"}}]`), 400, "tool_choice", "invalid_value"},
		{"tool_choice without tools", "/v1/chat/completions", chat(`,"tool_choice":"required"`), 400, "tool_choice", "invalid_value"},
		{"functions", "/v1/chat/completions", chat(`,"functions":[{"name":"f"}]`), 400, "functions", "unsupported_parameter"},
		{"response_format type", "/v1/chat/completions", chat(`,"response_format":{"type":"xml"}`), 400, "response_format.type", "invalid_value"},
		{"json_schema missing", "/v1/chat/completions", chat(`,"response_format":{"type":"json_schema"}`), 400, "response_format.json_schema", "missing_required_parameter"},
		{"json_schema name", "/v1/chat/completions", chat(`,"response_format":{"type":"json_schema","json_schema":{"name":"a b","schema":{}}}`), 400, "response_format.json_schema.name", "invalid_value"},
		{"json_schema no schema", "/v1/chat/completions", chat(`,"response_format":{"type":"json_schema","json_schema":{"name":"a"}}`), 400, "response_format.json_schema.schema", "missing_required_parameter"},
		{"json_schema keyword", "/v1/chat/completions", chat(`,"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"number","minimum":3}}}`), 400, "response_format", "unsupported_value"},
		{"json_schema unsatisfiable", "/v1/chat/completions", chat(`,"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"enum":[]}}}`), 400, "response_format", "invalid_value"},
		{"json and forced tools", "/v1/chat/completions", chat(`,"response_format":{"type":"json_object"},"tool_choice":"required","tools":[{"type":"function","function":{"name":"f"}}]`), 400, "response_format", "invalid_value"},
		{"json and ignore_eos", "/v1/chat/completions", chat(`,"response_format":{"type":"json_object"},"ignore_eos":true`), 400, "ignore_eos", "invalid_value"},
		{"tool message without id", "/v1/chat/completions", `{"model":"` + model + `","messages":[{"role":"user","content":"x"},{"role":"tool","content":"4"}]}`, 400, "messages[1].tool_call_id", "missing_required_parameter"},
		{"assistant tool_calls type", "/v1/chat/completions", `{"model":"` + model + `","messages":[{"role":"assistant","content":null,"tool_calls":{"id":"x"}}]}`, 400, "messages[0].tool_calls", "invalid_type"},
		{"assistant tool_call without name", "/v1/chat/completions", `{"model":"` + model + `","messages":[{"role":"assistant","tool_calls":[{"id":"x","type":"function","function":{"arguments":"{}"}}]}]}`, 400, "messages[0].tool_calls[0].function.name", "missing_required_parameter"},
		{"no messages", "/v1/chat/completions", `{"model":"` + model + `","messages":[]}`, 400, "messages", "invalid_value"},
		{"bad role", "/v1/chat/completions", `{"model":"` + model + `","messages":[{"role":"robot","content":"x"}]}`, 400, "messages[0].role", "invalid_value"},
		{"no role", "/v1/chat/completions", `{"model":"` + model + `","messages":[{"content":"x"}]}`, 400, "messages[0].role", "missing_required_parameter"},
		{"image part", "/v1/chat/completions", `{"model":"` + model + `","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "messages[0].content[0].type", "unsupported_value"},
		{"content type", "/v1/chat/completions", `{"model":"` + model + `","messages":[{"role":"user","content":5}]}`, 400, "messages[0].content", "invalid_type"},
		{"chat context overflow", "/v1/chat/completions", `{"model":"` + model + `","messages":[{"role":"user","content":"` + long + `"}]}`, 400, "messages", "context_length_exceeded"},
		{"max_tokens beyond context", "/v1/chat/completions", chat(`,"max_tokens":250`), 400, "messages", "context_length_exceeded"},
		{"completion overflow", "/v1/completions", `{"model":"` + model + `","prompt":"` + long + `"}`, 400, "prompt", "context_length_exceeded"},
		{"no prompt", "/v1/completions", `{"model":"` + model + `"}`, 400, "prompt", "missing_required_parameter"},
		{"empty prompt", "/v1/completions", `{"model":"` + model + `","prompt":""}`, 400, "prompt", "invalid_value"},
		{"token out of vocabulary", "/v1/completions", `{"model":"` + model + `","prompt":[1,2,999999]}`, 400, "prompt", "invalid_value"},
		{"negative token", "/v1/completions", `{"model":"` + model + `","prompt":[-1]}`, 400, "prompt", "invalid_value"},
		{"batch of prompts", "/v1/completions", `{"model":"` + model + `","prompt":["a","b"]}`, 400, "prompt", "unsupported_value"},
		{"prompt type", "/v1/completions", `{"model":"` + model + `","prompt":{"a":1}}`, 400, "prompt", "invalid_type"},
		{"echo", "/v1/completions", `{"model":"` + model + `","prompt":"a","echo":true}`, 400, "echo", "unsupported_parameter"},
		{"completion logprobs", "/v1/completions", `{"model":"` + model + `","prompt":"a","logprobs":21}`, 400, "logprobs", "invalid_value"},
		{"best_of", "/v1/completions", `{"model":"` + model + `","prompt":"a","best_of":3}`, 400, "best_of", "unsupported_value"},
		{"completion n", "/v1/completions", `{"model":"` + model + `","prompt":"a","n":0}`, 400, "n", "invalid_value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, data := ts.do(t, http.MethodPost, c.path, c.body)
			checkError(t, resp, data, c.status, c.param, c.code)
		})
	}
	// Nothing was generated, nothing is running, and every refusal was logged.
	if st := ts.Stats(); st.Generations != 0 || st.Running != 0 || st.Requests != uint64(len(cases)) {
		t.Fatalf("stats after refusals: %+v", st)
	}
}

func TestRoutingErrors(t *testing.T) {
	ts := startServer(t, Config{})
	resp, data := ts.do(t, http.MethodGet, "/v1/engines", nil)
	checkError(t, resp, data, 404, "", "unknown_url")
	resp, data = ts.do(t, http.MethodPost, "/v1/chat/completion", "{}")
	checkError(t, resp, data, 404, "", "unknown_url")
	resp, data = ts.do(t, http.MethodGet, "/v1/chat/completions", nil)
	checkError(t, resp, data, 405, "", "method_not_allowed")
	if a := resp.Header.Get("Allow"); a != "POST" {
		t.Fatalf("Allow %q", a)
	}
	resp, data = ts.do(t, http.MethodDelete, "/v1/models", nil)
	checkError(t, resp, data, 405, "", "method_not_allowed")
	resp, data = ts.do(t, http.MethodPost, "/health", "{}")
	checkError(t, resp, data, 405, "", "method_not_allowed")
}

func TestAPIKey(t *testing.T) {
	ts := startServer(t, Config{APIKey: "sk-test-123"})
	body := map[string]any{"model": ts.ModelID(), "prompt": "Hi", "max_tokens": 2}
	resp, data := ts.do(t, http.MethodPost, "/v1/completions", body)
	checkError(t, resp, data, 401, "", "invalid_api_key")
	if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
	}
	for _, bad := range []string{"Bearer sk-test-12", "Bearer sk-test-1234", "sk-test-123", "Basic c2stdGVzdC0xMjM="} {
		resp, data = ts.do(t, http.MethodPost, "/v1/completions", body, "Authorization", bad)
		checkError(t, resp, data, 401, "", "invalid_api_key")
	}
	resp, data = ts.do(t, http.MethodGet, "/v1/models", nil)
	checkError(t, resp, data, 401, "", "invalid_api_key")
	resp, data = ts.do(t, http.MethodPost, "/v1/completions", body, "Authorization", "Bearer sk-test-123")
	if resp.StatusCode != 200 {
		t.Fatalf("with the key: %d %s", resp.StatusCode, data)
	}
	resp, data = ts.do(t, http.MethodGet, "/v1/models", nil, "Authorization", "bearer sk-test-123")
	if resp.StatusCode != 200 {
		t.Fatalf("models with the key: %d %s", resp.StatusCode, data)
	}
	// /health answers without the key: load balancers probe it.
	if resp, _ = ts.do(t, http.MethodGet, "/health", nil); resp.StatusCode != 200 {
		t.Fatalf("health: %d", resp.StatusCode)
	}
}

func TestBodyLimit(t *testing.T) {
	ts := startServer(t, Config{MaxBodyBytes: 2048})
	big := `{"model":"` + ts.ModelID() + `","prompt":"` + strings.Repeat("a", 4096) + `"}`
	resp, data := ts.do(t, http.MethodPost, "/v1/completions", big)
	checkError(t, resp, data, 413, "", "request_too_large")
	// Without Content-Length (chunked), the limit applies while reading.
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/completions", struct{ *strings.Reader }{strings.NewReader(big)})
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1
	resp, err = ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data = readAll(t, resp)
	checkError(t, resp, data, 413, "", "request_too_large")
	// Under the limit all is well.
	resp, data = ts.do(t, http.MethodPost, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": "a", "max_tokens": 1})
	if resp.StatusCode != 200 {
		t.Fatalf("small body: %d %s", resp.StatusCode, data)
	}
}
