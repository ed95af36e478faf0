package clidoc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// newTool builds a small command tree the way the commands do; usage is --count's text.
func newTool(usage string, withSub bool) *cobra.Command {
	root := &cobra.Command{
		Use:     "tool MODEL",
		Short:   "Pack a <model> into *one* file",
		Long:    "tool packs MODEL.\n\nA ``` fence inside stays text; <name> is not a tag.\n",
		Version: "tool 1.0",
		RunE:    func(*cobra.Command, []string) error { return nil },
	}
	root.Flags().Int("count", 3, usage)
	root.PersistentFlags().String("isa", "", "instruction-set level")
	if withSub {
		sub := &cobra.Command{Use: "sub", Short: "Do a sub thing", RunE: func(*cobra.Command, []string) error { return nil }}
		sub.Flags().Bool("json", false, "print JSON")
		root.AddCommand(sub)
	}
	root.AddCommand(&cobra.Command{Use: "secret", Hidden: true, RunE: func(*cobra.Command, []string) error { return nil }})
	return root
}

// TestGenerateThenCheck writes a tree's reference and checks it: the pages and index rows
// are there, without a date; the hand-written text of the index and another tool's section
// survive; Check passes on what Generate wrote and names the page a changed usage or a
// removed command makes stale, and Generate then brings the folder back in line.
func TestGenerateThenCheck(t *testing.T) {
	dir := t.TempDir()
	other := "# CLI\n\nHand-written.\n\n" + beginMarker("other") + "\n| rows |\n" + endMarker("other") + "\n"
	if err := os.WriteFile(filepath.Join(dir, IndexFile), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Generate(newTool("how many", true), dir); err != nil {
		t.Fatal(err)
	}
	names, err := toolPages(dir, "tool")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"tool.md", "tool_completion.md", "tool_completion_bash.md", "tool_completion_fish.md",
		"tool_completion_powershell.md", "tool_completion_zsh.md", "tool_sub.md"}
	if !slices.Equal(names, want) {
		t.Fatalf("pages %v, want %v", names, want)
	}
	page := read(t, dir, "tool.md")
	for _, s := range []string{"Pack a \\<model\\> into \\*one\\* file", "````\ntool packs MODEL.\n\nA ``` fence inside stays text; <name> is not a tag.\n````",
		"--count int    how many (default 3)", "-v, --version      version for tool", "[tool sub](tool_sub.md)"} {
		if !strings.Contains(page, s) {
			t.Errorf("tool.md lacks %q:\n%s", s, page)
		}
	}
	if strings.Contains(page, "Auto generated") || strings.Contains(page, "secret") {
		t.Errorf("tool.md has a date line or the hidden command:\n%s", page)
	}
	index := read(t, dir, IndexFile)
	if !strings.HasPrefix(index, other) || !strings.Contains(index, "| [tool sub](tool_sub.md) | Do a sub thing |\n") {
		t.Errorf("index:\n%s", index)
	}

	if err := Check(newTool("how many", true), dir); err != nil {
		t.Fatalf("Check after Generate: %v", err)
	}
	err = Check(newTool("how many items", true), dir)
	if err == nil || !strings.Contains(err.Error(), "tool.md: line ") || !strings.Contains(err.Error(), Regenerate) {
		t.Errorf("Check after a usage changed: %v", err)
	}
	err = Check(newTool("how many", false), dir)
	if err == nil || !strings.Contains(err.Error(), "tool_sub.md: no such command") || !strings.Contains(err.Error(), IndexFile+": ") {
		t.Errorf("Check after a command went: %v", err)
	}
	if err := Generate(newTool("how many", false), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tool_sub.md")); !os.IsNotExist(err) {
		t.Errorf("the page of a removed command stays: %v", err)
	}
	if err := Check(newTool("how many", false), dir); err != nil {
		t.Errorf("Check after regenerating: %v", err)
	}
	if !strings.HasPrefix(read(t, dir, IndexFile), other) {
		t.Errorf("regenerating changed the rest of the index:\n%s", read(t, dir, IndexFile))
	}

	os.Remove(filepath.Join(dir, "tool_completion.md"))
	if err := Check(newTool("how many", false), dir); err == nil || !strings.Contains(err.Error(), "tool_completion.md: missing") {
		t.Errorf("Check with a page missing: %v", err)
	}
}

// TestIndexWithoutMarkers: a missing index is created with a title; a broken pair of markers
// is refused rather than guessed at.
func TestIndexWithoutMarkers(t *testing.T) {
	got, err := withSection(nil, "tool", "| row |\n")
	if err != nil || string(got) != "# Command-line reference\n\n## tool\n\n"+beginMarker("tool")+"\n| row |\n"+endMarker("tool")+"\n" {
		t.Errorf("new index %q, %v", got, err)
	}
	if _, err := withSection([]byte(beginMarker("tool")+"\n| row |\n"), "tool", ""); err == nil || !strings.Contains(err.Error(), "end of tool commands") {
		t.Errorf("no end marker: %v", err)
	}
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
