package clidoc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Regenerate is the command that rewrites the reference, for messages.
const Regenerate = "go generate ./cmd/..."

// IndexFile is the index page in the reference's folder; each tool owns one marked section.
const IndexFile = "README.md"

// Pages renders root's reference: file name (cobra's "anerun_serve.md") to page. root must be
// a tree built for this: its texts are made Markdown-safe in place. The pages show what the
// binary's --help shows: the help and version flags and the completion command are added as
// cobra adds them when it executes, Long texts stay verbatim in a code block, and no page
// carries a date.
func Pages(root *cobra.Command) (map[string][]byte, error) {
	prepare(root)
	pages := map[string][]byte{}
	for _, c := range commands(root) {
		var b bytes.Buffer
		if err := doc.GenMarkdownCustom(c, &b, func(s string) string { return s }); err != nil {
			return nil, fmt.Errorf("%s: %w", c.CommandPath(), err)
		}
		pages[pageName(c)] = b.Bytes()
	}
	return pages, nil
}

// Generate writes root's reference into dir: its pages (removing pages of commands that no
// longer exist) and its section of dir/README.md, which is created if missing; the rest of
// the index, hand-written, is kept.
func Generate(root *cobra.Command, dir string) error {
	pages, err := Pages(root)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := toolPages(dir, root.Name())
	if err != nil {
		return err
	}
	for _, name := range old {
		if _, ok := pages[name]; !ok {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	for name, page := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), page, 0o644); err != nil {
			return err
		}
	}
	index := filepath.Join(dir, IndexFile)
	text, err := os.ReadFile(index)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	text, err = withSection(text, root.Name(), section(root))
	if err != nil {
		return fmt.Errorf("%s: %w", index, err)
	}
	return os.WriteFile(index, text, 0o644)
}

// Check generates root's reference into a temporary folder and compares it with the one in
// dir: every page of the tool and its section of the index. The error names each page that
// differs, is missing or should no longer exist, and says how to regenerate.
func Check(root *cobra.Command, dir string) error {
	tmp, err := os.MkdirTemp("", "clidoc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// The index is shared with the other tools: generate into a copy of it.
	if b, err := os.ReadFile(filepath.Join(dir, IndexFile)); err == nil {
		if err := os.WriteFile(filepath.Join(tmp, IndexFile), b, 0o644); err != nil {
			return err
		}
	}
	if err := Generate(root, tmp); err != nil {
		return err
	}
	want, err := toolPages(tmp, root.Name())
	if err != nil {
		return err
	}
	have, err := toolPages(dir, root.Name())
	if err != nil {
		return err
	}
	var stale []string
	for _, name := range append(want, IndexFile) {
		w, err := os.ReadFile(filepath.Join(tmp, name))
		if err != nil {
			return err
		}
		h, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case errors.Is(err, os.ErrNotExist):
			stale = append(stale, name+": missing")
		case err != nil:
			return err
		case !bytes.Equal(w, h):
			stale = append(stale, name+": "+firstDifference(h, w))
		}
	}
	for _, name := range have {
		if !slices.Contains(want, name) {
			stale = append(stale, name+": no such command any more")
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("the %s reference in %s is stale (run %s):\n\t%s", root.Name(), dir, Regenerate, strings.Join(stale, "\n\t"))
	}
	return nil
}

// prepare makes root's tree look as it does when the binary runs, and its texts Markdown-safe.
func prepare(root *cobra.Command) {
	root.InitDefaultVersionFlag()
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true // the date line would change every day
		c.InitDefaultHelpFlag()
		c.Short = escape(c.Short)
		if c.Long != "" {
			c.Long = fenced(c.Long)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// commands lists root and every command below it that --help lists, parents before children,
// children by name (cobra's order).
func commands(root *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{root}
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() && !c.IsAdditionalHelpTopicCommand() {
			out = append(out, commands(c)...)
		}
	}
	return out
}

// pageName is the file of c's page, as cobra's GenMarkdownTree names it.
func pageName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}

// toolPages lists the pages of the tool named tool in dir: tool.md and tool_*.md.
func toolPages(dir, tool string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && (n == tool+".md" || strings.HasPrefix(n, tool+"_") && strings.HasSuffix(n, ".md")) {
			names = append(names, n)
		}
	}
	return names, nil
}

// escape makes one line of help text read the same in Markdown: "<model name>" would be taken
// for an HTML tag, "*" and "_" for emphasis, "|" would split a table cell.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>|", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fenced puts text in a code block, verbatim as --help prints it, with a fence longer than any
// run of backticks inside.
func fenced(text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + "\n" + strings.TrimRight(text, "\n") + "\n" + fence
}

// firstDifference describes where have first differs from want, by line.
func firstDifference(have, want []byte) string {
	h, w := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(h), len(w)) {
		if h[i] != w[i] {
			return fmt.Sprintf("line %d is %q, the commands give %q", i+1, h[i], w[i])
		}
	}
	if len(h) < len(w) {
		return fmt.Sprintf("ends at line %d, the commands go on with %q", len(h), w[len(h)])
	}
	return fmt.Sprintf("goes on after line %d with %q", len(w), h[len(w)])
}
