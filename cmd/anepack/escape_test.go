package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/runtime/testmodel"
)

// hostileText is what a bundle's maker can put in a name: set the terminal's window title,
// clear the screen, go back to the start of the line, start a line that looks like inspect's.
const hostileText = "\x1b]0;pwned\x07\x1b[2J\x1b[H\rformat      9.9\nfake line\u009b31m\u202e"

// TestInspectEscapes inspects a bundle whose model name, producer, source files, tensor and
// section names carry terminal control sequences and newlines: inspect used to print them raw
// (the window title set, the screen cleared, lines faked). Now every one is escaped, and the
// output has exactly the lines of the same bundle with plain names.
func TestInspectEscapes(t *testing.T) {
	src := testmodel.Bundle(t, "qwen2-tiny", "f16")
	dir := t.TempDir()
	plainPath, hostilePath := filepath.Join(dir, "plain.aneb"), filepath.Join(dir, "hostile.aneb")
	edit := func(text string) func(m *format.Manifest) {
		return func(m *format.Manifest) {
			m.Model.Name = "model" + text
			m.Producer = "producer" + text
			m.Provenance.Files = append(m.Provenance.Files, format.SourceFile{Name: "file" + text, SHA256: "sha" + text})
			m.Tensors[0].Name = "tensor" + text
			m.Tensors[0].DType = "f16" + text
		}
	}
	if err := testmodel.RewriteAdding(src, plainPath, map[string][]byte{"tensors/extra": {1}}, edit("")); err != nil {
		t.Fatal(err)
	}
	if err := testmodel.RewriteAdding(src, hostilePath, map[string][]byte{"tensors/extra" + hostileText: {1}}, edit(hostileText)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"inspect"}, {"inspect", "--tensors"}} {
		want := mustRun(t, append(args, plainPath)...)
		got := mustRun(t, append(args, hostilePath)...)
		if strings.ContainsAny(got, "\x1b\x07\r\u009b\u202e") {
			t.Errorf("anepack %s printed control characters:\n%q", strings.Join(args, " "), got)
		}
		if g, w := strings.Count(got, "\n"), strings.Count(want, "\n"); g != w {
			t.Errorf("anepack %s printed %d lines for the hostile names, %d for plain ones:\n%s", strings.Join(args, " "), g, w, got)
		}
		if n := strings.Count(got, `\x1b]0;pwned\x07\x1b[2J\x1b[H\x0dformat      9.9\x0afake line\u009b31m\u202e`); n < 5 {
			t.Errorf("anepack %s shows the escaped name %d times; want each of the fields:\n%s", strings.Join(args, " "), n, got)
		}
	}
}
