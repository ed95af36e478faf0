package serve

import (
	"math"
	"net/http"
	"strings"
	"testing"
)

// TestTinyTemperature: temperatures that overflow the scaled logits (1e-40 to 1e-300 were
// accepted, and the sampler returned its last candidate, a token without text) decode as
// temperature 0 does.
func TestTinyTemperature(t *testing.T) {
	ts := startServer(t, Config{})
	tok, _ := testModel.Tokenizer()
	want := reference(t, tok.Encode("Hello"), greedy(6)).Text
	for _, temp := range []float64{1e-40, 1e-300} {
		var got textCompletion
		ts.post(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": "Hello", "max_tokens": 6, "temperature": temp}, &got)
		if got.Choices[0].Text != want {
			t.Fatalf("temperature %g: %q; want the greedy %q", temp, got.Choices[0].Text, want)
		}
	}
}

// TestHugeMaxTokens: max_tokens near 2^63 is refused as not fitting the context. The check
// added it to the prompt's length, which wrapped to a negative number for 2^63-1 and let it
// through.
func TestHugeMaxTokens(t *testing.T) {
	ts := startServer(t, Config{})
	for _, field := range []string{"max_tokens", "max_completion_tokens"} {
		for _, n := range []int64{math.MaxInt64, math.MaxInt64 - 1000} {
			for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
				body := map[string]any{"model": ts.ModelID(), field: n, "prompt": "Hello",
					"messages": []map[string]string{{"role": "user", "content": "Hello"}}}
				if path == "/v1/completions" {
					delete(body, "messages")
				} else {
					delete(body, "prompt")
				}
				if path == "/v1/completions" && field == "max_completion_tokens" {
					continue // a chat field
				}
				resp, data := ts.do(t, http.MethodPost, path, body)
				param := "prompt"
				if path != "/v1/completions" {
					param = "messages"
				}
				checkError(t, resp, data, http.StatusBadRequest, param, "context_length_exceeded")
				if strings.Contains(string(data), "-") {
					t.Fatalf("%s %s=%d: a negative count in %s", path, field, n, data)
				}
			}
		}
	}
}
