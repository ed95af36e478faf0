package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anepack/anepack/tokenizer"
)

// serverAddr waits for the server's "serving" log line and returns its address.
func serverAddr(t *testing.T, p *process) string {
	t.Helper()
	re := regexp.MustCompile(`msg=serving addr=(\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(p.stderr.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not start; stderr: %s", p.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServe runs `anerun serve` on a loopback port: a completion equals the in-process greedy
// text, and SIGTERM during a stream lets the stream finish before the process exits 0.
func TestServe(t *testing.T) {
	path := bundle(t)
	want := expected(t, path, func(tk *tokenizer.Tokenizer) []int { return tk.Encode("Hello") }, 6)
	p := start(t, "serve", path, "--addr", "127.0.0.1:0", "--threads", "1", "--ctx", "256", "--parallel", "1")
	url := "http://" + serverAddr(t, p) + "/v1/completions"
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"model":"qwen2-tiny","prompt":"Hello","max_tokens":6,"temperature":0}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Choices []struct{ Text string } `json:"choices"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || len(got.Choices) != 1 || got.Choices[0].Text != want {
		t.Fatalf("status %d, %+v (%v); want text %q", resp.StatusCode, got, err, want)
	}

	resp, err = http.Post(url, "application/json", strings.NewReader(`{"model":"qwen2-tiny","prompt":"Hello","max_tokens":40,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first event %q: %v", line, err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var last string
	for {
		line, err := br.ReadString('\n')
		if strings.HasPrefix(line, "data: ") {
			last = line
		}
		if err != nil {
			break
		}
	}
	if strings.TrimSpace(last) != "data: [DONE]" {
		t.Fatalf("the stream ended with %q, not [DONE]", last)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, p.stderr.String())
	}
	if s := p.stderr.String(); !strings.Contains(s, "msg=stopped") || strings.Count(s, "msg=request ") != 2 {
		t.Fatalf("stderr: %s", s)
	}
}

// TestHTTPShortcut runs `anerun MODEL --http PORT` and asks it for its models.
func TestHTTPShortcut(t *testing.T) {
	p := start(t, bundle(t), "--http", "0", "--threads", "1", "--ctx", "128")
	addr := serverAddr(t, p)
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("--http 0 listens on %s; want loopback", addr)
	}
	resp, err := http.Get("http://" + addr + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, p.stderr.String())
	}
}

// TestServedModelName: --served-model-name (repeated and comma-separated) sets the only names
// the server answers to, the first listed; others get 404 model_not_found. Bad values of the
// new flags are refused before the model loads.
func TestServedModelName(t *testing.T) {
	path := bundle(t)
	p := start(t, "serve", path, "--addr", "127.0.0.1:0", "--threads", "1", "--ctx", "128", "--parallel", "1",
		"--served-model-name", "tiny,tiny-alias", "--served-model-name", "third", "--tool-call-parser", "hermes")
	base := "http://" + serverAddr(t, p)
	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || len(list.Data) != 1 || list.Data[0].ID != "tiny" {
		t.Fatalf("models %+v (%v); want tiny", list, err)
	}
	for name, status := range map[string]int{"tiny": 200, "tiny-alias": 200, "third": 200, "qwen2-tiny": 404} {
		resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"model":"`+name+`","prompt":"Hi","max_tokens":1}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Errorf("model %q: status %d; want %d", name, resp.StatusCode, status)
		}
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, p.stderr.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tool-call-parser", "mistral"}, `--tool-call-parser "mistral"`},
		{[]string{"--served-model-name", "a", "--model-name", "b"}, "--served-model-name"},
		{[]string{"--served-model-name", "a,a"}, "distinct"},
	} {
		r := anerun(t, "", append([]string{"serve", path, "--addr", "127.0.0.1:0"}, tc.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error mentioning %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
