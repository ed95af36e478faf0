package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/peterh/liner"

	"github.com/anepack/anepack/internal/cli"
)

// The chat's prompts: ">>> " for a message, "... " inside a """ block, as ollama shows them.
const (
	promptMessage = ">>> "
	promptBlock   = "... "
)

// blockQuote opens and closes a multi-line message.
const blockQuote = `"""`

// errAborted is Ctrl-C at the prompt (not during an answer, where it is a signal that stops
// the answer).
var errAborted = errors.New("aborted at the prompt")

// lineReader reads one line of the user's input after showing a prompt.
type lineReader interface {
	readLine(prompt string) (string, error)
	// Close gives the terminal back as it was.
	Close() error
}

// newLineReader picks how to read: with line editing and history (peterh/liner) when stdin
// and stdout are both a terminal, else plain lines (a pipe, a file, a redirected stdout),
// echoing the prompt only when stdin is a terminal.
func newLineReader(in io.Reader, out io.Writer, historyFile string, errw io.Writer) lineReader {
	inF, inOK := in.(*os.File)
	outF, outOK := out.(*os.File)
	tty := inOK && cli.IsTerminal(inF)
	if tty && outOK && cli.IsTerminal(outF) && inF == os.Stdin && outF == os.Stdout && liner.TerminalSupported() {
		return newEditor(historyFile, errw)
	}
	return &plainReader{r: bufio.NewReader(in), out: out, echo: tty}
}

// plainReader reads lines from a pipe or a file.
type plainReader struct {
	r    *bufio.Reader
	out  io.Writer
	echo bool
}

func (p *plainReader) readLine(prompt string) (string, error) {
	if p.echo {
		fmt.Fprint(p.out, prompt)
	}
	line, err := p.r.ReadString('\n')
	if err == io.EOF && line == "" {
		return "", io.EOF
	}
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("reading stdin: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func (p *plainReader) Close() error { return nil }

// editor reads lines on a terminal with peterh/liner: arrows, Ctrl-A/E/K/U/W/L, Ctrl-R
// search, and a history kept in the store directory across runs.
type editor struct {
	st   *liner.State
	hist *history
}

func newEditor(historyFile string, errw io.Writer) *editor {
	e := &editor{st: liner.NewLiner(), hist: openHistory(historyFile, errw)}
	e.st.SetCtrlCAborts(true)
	e.st.SetMultiLineMode(true)
	for _, h := range e.hist.lines {
		e.st.AppendHistory(h)
	}
	return e
}

func (e *editor) readLine(prompt string) (string, error) {
	line, err := e.st.Prompt(prompt)
	switch {
	case errors.Is(err, liner.ErrPromptAborted):
		return "", errAborted
	case err != nil:
		return "", err
	}
	if strings.TrimSpace(line) != "" {
		e.st.AppendHistory(line)
		e.hist.add(line)
	}
	return line, nil
}

func (e *editor) Close() error { return e.st.Close() }

// readMessage reads the next message: one line, or the lines of a """ block (opened by a line
// that starts with """, closed by one that ends with it; the quotes are not part of the
// message). block reports whether it was a block, whose first line is never a command.
// Ctrl-C inside a block discards it and returns errBlockDiscarded; end of input inside one
// ends it.
func readMessage(r lineReader) (text string, block bool, err error) {
	line, err := r.readLine(promptMessage)
	if err != nil {
		return "", false, err
	}
	first := strings.TrimLeft(line, " \t")
	if !strings.HasPrefix(first, blockQuote) {
		return line, false, nil
	}
	rest := strings.TrimPrefix(first, blockQuote)
	if body, ok := strings.CutSuffix(strings.TrimRight(rest, " \t"), blockQuote); ok {
		return body, true, nil // """one line"""
	}
	var lines []string
	if rest != "" {
		lines = append(lines, rest)
	}
	for {
		l, err := r.readLine(promptBlock)
		switch {
		case errors.Is(err, errAborted):
			return "", true, errBlockDiscarded
		case errors.Is(err, io.EOF):
			return strings.Join(lines, "\n"), true, nil
		case err != nil:
			return "", true, err
		}
		if body, ok := strings.CutSuffix(strings.TrimRight(l, " \t"), blockQuote); ok {
			return strings.Join(append(lines, body), "\n"), true, nil
		}
		lines = append(lines, l)
	}
}

// errBlockDiscarded is a """ block ended with Ctrl-C: nothing is sent.
var errBlockDiscarded = errors.New(`the """ block was discarded`)
