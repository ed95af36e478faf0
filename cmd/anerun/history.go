package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/peterh/liner"

	"github.com/anepack/anepack/store"
)

// historyName is the chat history's file in the store directory ($ANEPACK_HOME).
const historyName = "history"

// historyKeep is how many lines the history keeps (liner's own limit); the file is cut back to
// that when it has grown to twice as many.
const historyKeep = liner.HistoryLimit

// history is the chat's line history across runs: each line typed is appended to the file at
// once (so a chat ended by a signal or a crash keeps it, and two chats at once interleave
// rather than overwrite each other).
type history struct {
	path  string
	lines []string
	errw  io.Writer

	once sync.Once // the first write error is reported, the rest are not
}

// historyPath is where the chat history lives: the store directory, "" when there is none.
func historyPath() string {
	dir, err := store.DefaultDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, historyName)
}

// openHistory reads the last historyKeep lines of path (a missing file is an empty history).
func openHistory(path string, errw io.Writer) *history {
	h := &history{path: path, errw: errw}
	if path == "" {
		return h
	}
	f, err := os.Open(path)
	if err != nil {
		return h
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var all []string
	for sc.Scan() {
		if l := sc.Text(); strings.TrimSpace(l) != "" {
			all = append(all, l)
		}
	}
	if len(all) > historyKeep {
		h.lines = all[len(all)-historyKeep:]
	} else {
		h.lines = all
	}
	if len(all) >= 2*historyKeep {
		h.rewrite()
	}
	return h
}

// add appends one line to the file.
func (h *history) add(line string) {
	if h.path == "" {
		return
	}
	err := os.MkdirAll(filepath.Dir(h.path), 0o755)
	if err == nil {
		var f *os.File
		if f, err = os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			_, err = io.WriteString(f, line+"\n")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		h.once.Do(func() { fmt.Fprintf(h.errw, "anerun: the chat history is not kept: %v\n", err) })
	}
}

// rewrite replaces the file with the lines kept, through a temp file renamed into place.
func (h *history) rewrite() {
	tmp, err := os.CreateTemp(filepath.Dir(h.path), historyName+".tmp-*")
	if err != nil {
		return
	}
	_, err = io.WriteString(tmp, strings.Join(h.lines, "\n")+"\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o600)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), h.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
}
