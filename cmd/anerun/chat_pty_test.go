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

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/tokenizer"
)

// These tests drive the interactive chat through a real pseudo-terminal, as a person at a
// terminal would: keystrokes in (Enter is "\r", Ctrl-C "\x03"), the screen out (stdout and
// stderr together, with the line editor's escape sequences).

// term is anerun running on a pseudo-terminal.
type term struct {
	t    *testing.T
	cmd  *exec.Cmd
	pty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	// mark is where the output of the last step began.
	mark int
}

// startTerm runs anerun args on a new pseudo-terminal (200 columns, so no line wraps) with
// TERM=xterm and the given store directory.
func startTerm(t *testing.T, home string, args ...string) *term {
	t.Helper()
	cmd := exec.Command(anerunBin, args...)
	cmd.Env = append(os.Environ(), "TERM=xterm", "ANEPACK_HOME="+home)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, cmd: cmd, pty: f, done: make(chan struct{})}
	go func() {
		defer close(tm.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:n])
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		f.Close()
	})
	return tm
}

func (tm *term) screen() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

// since is what the screen shows after the last mark.
func (tm *term) since() string { return tm.screen()[tm.mark:] }

// send types keys, after marking where their output starts.
func (tm *term) send(keys string) {
	tm.t.Helper()
	tm.mark = len(tm.screen())
	if _, err := io.WriteString(tm.pty, keys); err != nil {
		tm.t.Fatal(err)
	}
}

// waitFor waits until the output since the mark holds want, and returns that output.
func (tm *term) waitFor(want string) string {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := tm.since()
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("no %q on the screen after 30 s; since the last keys:\n%q", want, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exitCode waits for anerun to end.
func (tm *term) exitCode() int {
	tm.t.Helper()
	done := make(chan error, 1)
	go func() { done <- tm.cmd.Wait() }()
	select {
	case err := <-done:
		// Everything anerun wrote before it exited is on the screen once the reader has read
		// to the end (its read fails when the terminal has no writer left).
		select {
		case <-tm.done:
		case <-time.After(10 * time.Second):
			tm.t.Fatal("the terminal still had output 10 s after anerun exited")
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			tm.t.Fatal(err)
		}
		return 0
	case <-time.After(20 * time.Second):
		tm.t.Fatalf("still running 20 s later; screen:\n%q", tm.since())
		return -1
	}
}

// promptIDs is the prompt the last answer was given, from --verbose's "prompt ids:" line.
var promptIDsRE = regexp.MustCompile(`prompt ids: (\[[0-9, ]*\])`)

func lastPromptIDs(t *testing.T, screen string) string {
	t.Helper()
	m := promptIDsRE.FindAllStringSubmatch(screen, -1)
	if len(m) == 0 {
		t.Fatalf("no prompt ids on the screen:\n%q", screen)
	}
	return m[len(m)-1][1]
}

// answerOf cuts the answer out of the screen after a message was sent: what follows the end of
// the echoed input line up to --verbose's report, with the terminal's \r\n back to \n.
func answerOf(t *testing.T, screen string) string {
	t.Helper()
	start := strings.Index(screen, "\r\n")
	end := strings.Index(screen, "\r\n\r\nprompt: ")
	if start < 0 || end < start {
		t.Fatalf("cannot find the answer in %q", screen)
	}
	return strings.ReplaceAll(screen[start+2:end], "\r\n", "\n")
}

// chatIDs is what anerun should send for msgs, as --verbose prints ids.
func chatIDs(t *testing.T, tok *tokenizer.Tokenizer, msgs ...chatMessage) string {
	t.Helper()
	ids, err := encodeChat(tok, msgs)
	if err != nil {
		t.Fatal(err)
	}
	return formatIDs(ids)
}

// TestChatTerminal is the chat as a person at a terminal uses it: line editing (Ctrl-L,
// Ctrl-A, Ctrl-E), a """ block of two lines, /set system, /set temperature (the answer is then the one
// `anerun --temperature` gives with the same seed), /clear, an unknown command that is not
// sent, Ctrl-C that stops an endless answer and leaves the chat running, Ctrl-C inside a block
// that discards it, Ctrl-D that exits 0; then a second run that recalls the first run's
// message with the up arrow from the history kept in the store, and Ctrl-C at the prompt,
// which exits 130.
func TestChatTerminal(t *testing.T) {
	path := bundle(t)
	home := t.TempDir()
	tok := openTok(t, path)
	user := func(s string) chatMessage { return chatMessage{Role: "user", Content: s} }

	tm := startTerm(t, home, "-i", path, "-n", "4", "--verbose", "--seed", "7")
	tm.waitFor(">>> ")
	if !strings.Contains(tm.screen(), "/help") {
		t.Errorf("no banner pointing at /help:\n%q", tm.screen())
	}

	// Ctrl-L clears the screen and keeps what was typed.
	tm.send("ello\x0c")
	tm.waitFor("\x1b[H\x1b[2J")
	// Line editing: "ello", Ctrl-A, "H", Ctrl-E, " there" is "Hello there".
	tm.send("\x01H\x05 there\r")
	s := tm.waitFor("generated: 4 tokens")
	if got, want := lastPromptIDs(t, s), chatIDs(t, tok, user("Hello there")); got != want {
		t.Errorf("edited line: prompt ids %s; want %s (Hello there)", got, want)
	}

	// A """ block: two lines, one message.
	tm.send("/clear\r")
	tm.waitFor("new conversation")
	tm.send(`"""` + "\r")
	tm.waitFor("... ")
	tm.send("line one\r")
	tm.waitFor("... ")
	tm.send(`line two"""` + "\r")
	s = tm.waitFor("generated: 4 tokens")
	if got, want := lastPromptIDs(t, s), chatIDs(t, tok, user("line one\nline two")); got != want {
		t.Errorf(`""" block: prompt ids %s; want %s`, got, want)
	}

	// /set system, on a new conversation.
	tm.send("/clear\r")
	tm.waitFor("new conversation")
	tm.send("/set system Be brief.\r")
	tm.waitFor("system message set")
	tm.send("Hi\r")
	s = tm.waitFor("generated: 4 tokens")
	if got, want := lastPromptIDs(t, s), chatIDs(t, tok, chatMessage{Role: "system", Content: "Be brief."}, user("Hi")); got != want {
		t.Errorf("/set system: prompt ids %s; want %s", got, want)
	}

	// /set temperature: the answer is the one-shot command's with the same temperature and seed.
	tm.send("/set system\r")
	tm.waitFor("no system message")
	tm.send("/clear\r")
	tm.waitFor("new conversation")
	tm.send("/set temperature 1.5\r")
	tm.waitFor("temperature 1.5")
	tm.send("Once upon\r")
	s = tm.waitFor("generated: 4 tokens")
	want := anerun(t, "", path, "Once upon", "--temperature", "1.5", "--seed", "7", "-n", "4")
	if got := answerOf(t, s); got != strings.TrimSuffix(want.stdout, "\n") {
		t.Errorf("after /set temperature 1.5 the answer is %q; anerun --temperature 1.5 --seed 7 answers %q", got, want.stdout)
	}
	greedy := anerun(t, "", path, "Once upon", "--seed", "7", "-n", "4")
	if greedy.stdout == want.stdout {
		t.Fatalf("temperature 1.5 and greedy give the same answer %q: the check above proves nothing", want.stdout)
	}

	// An unknown command is an error and is not sent to the model.
	before := strings.Count(tm.screen(), "generated: ")
	tm.send("/nonsense\r")
	tm.waitFor("unknown command /nonsense")
	tm.send("/set colour blue\r")
	tm.waitFor(`unknown setting "colour"`)
	if after := strings.Count(tm.screen(), "generated: "); after != before {
		t.Errorf("an unknown command reached the model (%d answers, then %d)", before, after)
	}

	// Ctrl-C during an endless answer stops it; the chat goes on.
	tm.send("/set max-tokens 0\r")
	tm.waitFor("max-tokens 0")
	tm.send("/clear\r")
	tm.waitFor("new conversation")
	tm.send("Tell me everything\r")
	deadline := time.Now().Add(30 * time.Second)
	for len(tm.since()) < 200 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	tm.send("\x03")
	s = tm.waitFor(">>> ")
	if !strings.Contains(s, "stopped by cancelled") {
		t.Errorf("Ctrl-C did not stop the answer as cancelled:\n%q", s)
	}

	// Ctrl-C inside a block discards it.
	tm.send(`"""` + "\r")
	tm.waitFor("... ")
	tm.send("never sent\r")
	tm.waitFor("... ")
	before = strings.Count(tm.screen(), "generated: ")
	tm.send("\x03")
	tm.waitFor("block was discarded")
	if after := strings.Count(tm.screen(), "generated: "); after != before {
		t.Errorf("a discarded block reached the model")
	}

	// The last message typed, for the second run to recall; then Ctrl-D exits 0.
	tm.send("/set max-tokens 4\r")
	tm.waitFor("max-tokens 4")
	tm.send("remember me\r")
	tm.waitFor("generated: 4 tokens")
	tm.send("\x04")
	if code := tm.exitCode(); code != 0 {
		t.Errorf("Ctrl-D: exit %d; want 0", code)
	}
	hist, err := os.ReadFile(filepath.Join(home, historyName))
	if err != nil || !strings.HasSuffix(string(hist), "remember me\n") || !strings.Contains(string(hist), "Hello there\n") {
		t.Errorf("history file: %q (%v)", hist, err)
	}

	// A new run: the up arrow brings back "remember me".
	tm = startTerm(t, home, "-i", path, "-n", "4", "--verbose")
	tm.waitFor(">>> ")
	tm.send("\x1b[A")
	tm.waitFor("remember me")
	tm.send("\r")
	s = tm.waitFor("generated: 4 tokens")
	if got, want := lastPromptIDs(t, s), chatIDs(t, tok, user("remember me")); got != want {
		t.Errorf("recalled from the history: prompt ids %s; want %s", got, want)
	}
	tm.send("\x03") // Ctrl-C at the prompt
	if code := tm.exitCode(); code != exitInterrupted {
		t.Errorf("Ctrl-C at the prompt: exit %d; want %d", code, exitInterrupted)
	}
	if s := tm.screen(); strings.Contains(s, "goroutine ") || strings.Contains(s, "panic") {
		t.Errorf("crash on the screen:\n%s", s)
	}
}

// openTok opens the tokenizer of the bundle at path for the test's expectations.
func openTok(t *testing.T, path string) *tokenizer.Tokenizer {
	t.Helper()
	m, err := runtime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
