package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/anepack/anepack/hub/hubtest"
)

// screen is anepack running on a pseudo-terminal: what a person sees, bars and all.
type screen struct {
	cmd  *exec.Cmd
	pty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{} // closed when the reader has read all the terminal shows
}

func startScreen(t *testing.T, dir string, args ...string) *screen {
	t.Helper()
	cmd := exec.Command(anepackBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TERM=xterm", "HF_HUB_DISABLE_PROGRESS_BARS=")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	s := &screen{cmd: cmd, pty: f, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); f.Close() })
	return s
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

func (s *screen) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(s.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q on the screen after 60 s:\n%q", want, s.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *screen) exitCode(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		drained(t, s.done)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(60 * time.Second):
		t.Fatalf("still running; screen:\n%q", s.String())
		return -1
	}
}

// drained waits until a terminal's reader has read everything the process wrote before it
// exited (its read then fails: the terminal has no writer left). Without the wait, the last
// bytes written before exit could still be in the terminal when the test read the screen.
func drained(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal still had output 10 s after the process exited")
	}
}

// TestTerminalProgress packs a Hub repo on a terminal whose Hub answers its first listing
// request with 503 and Retry-After: 1: a spinner counts the seconds while the listing is
// awaited, the download bar shows bytes done/total in binary units, the bundle's hash for the
// store is labelled "verifying"; then Ctrl-C during the conversion of a larger model exits
// 130 with the message on a line of its own.
func TestTerminalProgress(t *testing.T) {
	srv, _, _ := tinyHub(t)
	srv.SetFaults(hubtest.Faults{Status: []hubtest.StatusFault{{Endpoint: hubtest.API, Code: 503, RetryAfter: "1", Times: 1}}})
	s := startScreen(t, t.TempDir(), "Org/Tiny-Model", "--store")
	if code := s.exitCode(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, s.String())
	}
	out := s.String()
	spins := regexp.MustCompile(`Org/Tiny-Model: asking the Hub for its files . (\d+\.\d)s`).FindAllStringSubmatch(out, -1)
	seconds := map[string]bool{}
	for _, m := range spins {
		seconds[m[1]] = true
	}
	if len(seconds) < 3 {
		t.Errorf("the spinner showed %d distinct times while the Hub was retried; want it counting:\n%q", len(seconds), out)
	}
	if !regexp.MustCompile(`downloading \d/\d files +\d+% \[[= ]+\] [0-9.]+ (B|KiB|MiB)/[0-9.]+ MiB`).MatchString(out) {
		t.Errorf("no download bar with done/total:\n%q", out)
	}
	if !regexp.MustCompile(`verifying +100% \[=+\] [0-9.]+ MiB/[0-9.]+ MiB in `).MatchString(out) {
		t.Errorf("the store's hash is not shown as a finished verifying bar:\n%q", out)
	}
	if strings.Contains(out, " MB") || strings.Contains(out, " kB") {
		t.Errorf("decimal units beside binary ones:\n%q", out)
	}

	// Ctrl-C while a larger model converts.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cfg.json")
	os.WriteFile(cfg, []byte(`{"architectures":["Qwen2ForCausalLM"],"hidden_size":512,"intermediate_size":2048,
		"num_hidden_layers":8,"num_attention_heads":8,"num_key_value_heads":2,"vocab_size":151936,
		"max_position_embeddings":4096,"tie_word_embeddings":false,"rms_norm_eps":1e-6,"rope_theta":1000000}`), 0o644)
	ck := filepath.Join(dir, "m")
	mustRun(t, "synth", "--config", cfg, "--seed", "3", "-q", "-o", ck)
	s = startScreen(t, dir, ck, "-o", filepath.Join(dir, "m.aneb"))
	s.waitFor(t, "converting weights")
	io.WriteString(s.pty, "\x03")
	if code := s.exitCode(t); code != 130 {
		t.Errorf("Ctrl-C: exit %d; want 130:\n%q", code, s.String())
	}
	out = s.String()
	if !regexp.MustCompile(`(^|\r\n)anepack: interrupted; stopping\r\n`).MatchString(out) || strings.Contains(out, "context canceled") {
		t.Errorf("the interrupt message is not on a line of its own, or is followed by another:\n%q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "m.aneb")); err == nil {
		t.Errorf("the interrupted pack left its output")
	}
}
