package hub

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anepack/anepack/hub/hubtest"
)

// testToken is the token the fake Hub accepts in these tests.
const testToken = "hf_TESTsecretTOKEN0123456789"

// logBuf collects the client's log lines and echoes them to the test log.
type logBuf struct {
	t  testing.TB
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// sleeps records the waits the client asked for instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) list() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// newClient is a client for srv with a fresh cache, tiny backoffs and
// short timeouts, so that fault tests run in milliseconds.
func newClient(t testing.TB, srv *hubtest.Server) (*Client, *logBuf) {
	t.Helper()
	log := &logBuf{t: t}
	c := &Client{
		CacheDir:        t.TempDir(),
		Log:             log,
		Backoff:         Backoff{Retries: 3, Initial: time.Millisecond, Max: 4 * time.Millisecond},
		MetadataTimeout: 5 * time.Second,
		StallTimeout:    5 * time.Second,
	}
	if srv != nil {
		c.Endpoint = srv.URL
	}
	return c, log
}

// randBytes is n deterministic pseudo-random bytes.
func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for k := 0; k < 8; k++ {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// modelFiles is a repo as Hugging Face model repos look: what packing needs
// plus weights in other formats, sub-folders and docs that it must skip.
func modelFiles() []hubtest.File {
	return []hubtest.File{
		{Path: "config.json", Data: []byte(`{"architectures":["Qwen2ForCausalLM"],"hidden_size":64}`)},
		{Path: "generation_config.json", Data: []byte(`{"eos_token_id":[151645,151643]}`)},
		{Path: "tokenizer.json", Data: randBytes(1, 40<<10)},
		{Path: "tokenizer_config.json", Data: []byte(`{"chat_template":"{{ messages }}"}`)},
		{Path: "special_tokens_map.json", Data: []byte(`{}`)},
		{Path: "vocab.json", Data: []byte(`{"a":0}`)},
		{Path: "merges.txt", Data: []byte("#version: 0.2\na b\n")},
		{Path: "model.safetensors.index.json", Data: []byte(`{"metadata":{"total_size":1},"weight_map":{}}`)},
		{Path: "model-00001-of-00002.safetensors", Data: randBytes(2, 300<<10)},
		{Path: "model-00002-of-00002.safetensors", Data: randBytes(3, 200<<10)},
		{Path: "pytorch_model.bin", Data: randBytes(4, 10<<10)},
		{Path: "model.gguf", Data: randBytes(5, 10<<10)},
		{Path: "onnx/model.onnx", Data: randBytes(6, 10<<10)},
		{Path: "onnx/model.safetensors", Data: randBytes(7, 10<<10)},
		{Path: "original/consolidated.pth", Data: randBytes(8, 10<<10)},
		{Path: "README.md", Data: []byte("# model\n")},
		{Path: ".gitattributes", Data: []byte("*.safetensors filter=lfs\n")},
	}
}

// packNames are the files of modelFiles that PackFilter keeps.
var packNames = []string{
	"config.json", "generation_config.json", "merges.txt", "model-00001-of-00002.safetensors",
	"model-00002-of-00002.safetensors", "model.safetensors.index.json", "special_tokens_map.json",
	"tokenizer.json", "tokenizer_config.json", "vocab.json",
}

// oneFileRepo serves a repo with config.json and one LFS file of n bytes.
func oneFileRepo(t testing.TB, srv *hubtest.Server, id string, n int) (string, []byte) {
	t.Helper()
	data := randBytes(uint64(n), n)
	commit := srv.MustAddRepo(t, hubtest.Repo{ID: id, Files: []hubtest.File{
		{Path: "config.json", Data: []byte(`{}`)},
		{Path: "model.safetensors", Data: data},
	}})
	return commit, data
}

// requests filters the server's log.
func requests(srv *hubtest.Server, server, method string) []hubtest.Request {
	var out []hubtest.Request
	for _, r := range srv.Requests() {
		if (server == "" || r.Server == server) && (method == "" || r.Method == method) {
			out = append(out, r)
		}
	}
	return out
}

// mustEqualFile checks that path holds want.
func mustEqualFile(t testing.TB, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: content differs from the served file (%d vs %d bytes)", path, len(got), len(want))
	}
}

// wantKind checks that err has the given kind and that its message
// mentions every phrase.
func wantKind(t testing.TB, err, kind error, phrases ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected a %v error, got nil", kind)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("expected a %v error, got: %v", kind, err)
	}
	for _, p := range phrases {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

// listDir returns every path under dir, relative, for asserting what was
// (not) written.
func listDir(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}
