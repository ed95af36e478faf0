package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// hostileCase is one request built to cost a server as much as it can per byte: a constrained
// output whose grammar is expensive to recognize, or a combination of parameters that used to
// break the output. A server should answer each with a 200 or a 4xx, quickly, without slowing
// the ordinary streams.
type hostileCase struct {
	name string
	body []byte
}

// hostileCases returns the requests -hostile-every cycles through, for model.
func hostileCases(model string, maxTokens int) []hostileCase {
	chat := func(extra map[string]any) []byte {
		body := map[string]any{"model": model, "max_tokens": maxTokens, "temperature": 0.8,
			"messages": []map[string]any{{"role": "user", "content": "Answer in JSON."}}}
		for k, v := range extra {
			body[k] = v
		}
		b, _ := json.Marshal(body)
		return b
	}
	schema := func(s string) map[string]any {
		return map[string]any{"response_format": map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "h", "schema": json.RawMessage(s)}}}
	}
	consts := make([]string, 19000)
	for i := range consts {
		consts[i] = fmt.Sprintf(`{"const":"w%d"}`, i)
	}
	var strs []string
	for i := range 15 {
		strs = append(strs, fmt.Sprintf(`{"type":"string","maxLength":%d}`, 100+i))
	}
	stop := map[string]any{"stop": []string{"{", "\n"}, "response_format": map[string]any{"type": "json_object"}}
	return []hostileCase{
		{"schema DAG of 21 levels", chat(schema(dagSchema(21, false)))},
		{"forced tool with DAG parameters", chat(map[string]any{"tool_choice": "required", "tools": []map[string]any{{"type": "function",
			"function": map[string]any{"name": "f", "parameters": json.RawMessage(dagSchema(21, true))}}}})},
		{"array of an anyOf of 19,000 consts", chat(schema(`{"type":"array","items":{"anyOf":[` + strings.Join(consts, ",") + `]}}`))},
		{"15 strings and a const", chat(schema(`{"anyOf":[` + strings.Join(append(strs, `{"const":"auto"}`), ",") + `]}`))},
		{"stop strings with json_object", chat(stop)},
	}
}

// dagSchema is an anyOf DAG of n levels: $defs/dK is anyOf [dK+1, dK+1], 2^n paths to one
// integer, each definition listed before the one that refers to it so that no nesting limit
// applies (2 KB at n = 21). With object, the DAG is the value of the required property "n".
func dagSchema(n int, object bool) string {
	var defs, refs []string
	for k := range n {
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, k, k+1, k+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"integer"}`, n))
	for k := n; k >= 0; k-- {
		refs = append(refs, fmt.Sprintf(`{"$ref":"#/$defs/d%d"}`, k))
	}
	root := `"anyOf":[` + strings.Join(refs, ",") + `]`
	if object {
		root = `"type":"object","properties":{"n":{` + root + `}},"required":["n"],"additionalProperties":false`
	}
	return `{"$defs":{` + strings.Join(defs, ",") + `},` + root + `}`
}

// hostileStats counts the answers to hostile requests.
type hostileStats struct {
	mu                            sync.Mutex
	sent, ok, clientErr, serverEr int
	transport                     int
	ms                            []float64
	errs                          []string
}

// send posts one hostile case (without waiting for the next tick) and records its answer.
func (h *hostileStats) send(ctx context.Context, url string, c hostileCase) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(url, "/")+"/chat/completions", bytes.NewReader(c.body))
	if err != nil {
		panic(err) // the URL was checked when the models were listed
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	var status int
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		status = resp.StatusCode
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sent++
	h.ms = append(h.ms, float64(time.Since(start).Microseconds())/1000)
	switch {
	case err != nil:
		h.transport++
		h.note(fmt.Sprintf("%s: %v", c.name, err))
	case status >= 500:
		h.serverEr++
		h.note(fmt.Sprintf("%s: status %d: %.200s", c.name, status, body))
	case status >= 400:
		h.clientErr++
	default:
		h.ok++
	}
}

func (h *hostileStats) note(s string) {
	if len(h.errs) < 5 {
		h.errs = append(h.errs, s)
	}
}

// report adds the hostile requests' figures to out.
func (h *hostileStats) report(out map[string]any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out["hostile_sent"], out["hostile_2xx"], out["hostile_4xx"], out["hostile_5xx"], out["hostile_transport_errors"] =
		h.sent, h.ok, h.clientErr, h.serverEr, h.transport
	out["hostile_ms_p50"], out["hostile_ms_p99"] = round(pct(h.ms, 50)), round(pct(h.ms, 99))
	if len(h.errs) > 0 {
		out["hostile_errors"] = h.errs
	}
}
