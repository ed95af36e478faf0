package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
)

// TestClip: messages past maxMessage bytes are cut at a character boundary and say how much
// was cut; shorter ones are kept whole.
func TestClip(t *testing.T) {
	if got := clip("short"); got != "short" {
		t.Fatalf("clip(short) = %q", got)
	}
	long := strings.Repeat("é", maxMessage) // 2 bytes each
	got := clip(long)
	if len(got) > maxMessage+64 || !utf8.ValidString(got) || !strings.HasSuffix(got, "… (1024 more bytes)") {
		t.Fatalf("clip of %d bytes: %d bytes, %q", len(long), len(got), got[len(got)-40:])
	}
}

// TestErrorAmplification serves a bundle whose chat template raises an 8 MB exception: the
// 400 and every log line stay within a few KiB. Each request used to answer 8 MB and log 8 MB.
func TestErrorAmplification(t *testing.T) {
	path, err := buildBundle(testDir, "raise-8mb", func(files map[string][]byte) error {
		var cfg map[string]any
		if err := json.Unmarshal(files["tokenizer_config.json"], &cfg); err != nil {
			return err
		}
		cfg["chat_template"] = `{{ raise_exception("boom " * 1600000) }}`
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
	resp, data := ts.do(t, http.MethodPost, "/v1/chat/completions", map[string]any{"model": ts.ModelID(), "max_tokens": 2,
		"messages": []map[string]string{{"role": "user", "content": "hi"}}})
	checkError(t, resp, data, http.StatusBadRequest, "messages", "invalid_value")
	if len(data) > 2*maxMessage || !strings.Contains(string(data), "boom boom") || !strings.Contains(string(data), "more bytes)") {
		t.Fatalf("a %d-byte error body: %.200s…", len(data), data)
	}
	ts.logs.mu.Lock()
	logs := ts.logs.buf.String()
	ts.logs.mu.Unlock()
	for _, line := range strings.Split(logs, "\n") {
		if len(line) > 4*maxMessage {
			t.Fatalf("a %d-byte log line: %.200s…", len(line), line)
		}
	}
}
