package format

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// versionPhrases are the ways a document names the bundle format's version: "format version
// 1.2" is the phrase the documents use; the others are spellings a stale sentence might have
// ("bundle format 1.2", "(`.aneb`, version 1.2)", "# Byte layout, version 1.2").
var versionPhrases = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bformat\s+(?:version\s+)?v?(\d+\.\d+)\b`),
	regexp.MustCompile("(?i)\\.aneb`?,?\\s+version\\s+v?(\\d+\\.\\d+)\\b"),
	regexp.MustCompile(`(?i)\blayout,\s+version\s+v?(\d+\.\d+)\b`),
}

// TestDocumentsStateTheWrittenVersion reads the README, CONTRIBUTING.md, docs/*.md and this
// package's documentation and fails where one names a bundle format version other than the
// one this package writes, so that a version bump cannot leave a document behind. The README
// and the package documentation must name it at least once.
func TestDocumentsStateTheWrittenVersion(t *testing.T) {
	want := VersionString()
	docs, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := append([]string{filepath.Join("..", "README.md"), filepath.Join("..", "CONTRIBUTING.md"), "doc.go"}, docs...)
	mustName := map[string]bool{filepath.Join("..", "README.md"): true, "doc.go": true}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		found := 0
		for line, text := range strings.Split(string(data), "\n") {
			for _, re := range versionPhrases {
				for _, m := range re.FindAllStringSubmatch(text, -1) {
					found++
					if m[1] != want {
						t.Errorf("%s:%d: %q names format version %s; the code writes %s (format.MajorVersion, format.MinorVersion)", file, line+1, m[0], m[1], want)
					}
				}
			}
		}
		if mustName[file] && found == 0 {
			t.Errorf("%s: names no format version; expected \"format version %s\"", file, want)
		}
	}
}

// TestVersionPhrases checks that the phrases find the spellings they are meant to find, so that
// the test above cannot pass by matching nothing.
func TestVersionPhrases(t *testing.T) {
	for _, text := range []string{
		"A `.aneb` file is format version 9.7: a header",
		"the bundle format 9.7 adds",
		"## The bundle format (`.aneb`, version 9.7)",
		"// # Byte layout, version 9.7",
		"Format Version v9.7.",
	} {
		n := 0
		for _, re := range versionPhrases {
			for _, m := range re.FindAllStringSubmatch(text, -1) {
				n++
				if m[1] != "9.7" {
					t.Errorf("%q: found version %q, want 9.7", text, m[1])
				}
			}
		}
		if n != 1 {
			t.Errorf("%q: %d matches, want 1", text, n)
		}
	}
	for _, text := range []string{"program(1.0)", "Go 1.26 or newer", "version 2 of the blob format", "the minor version 2 of the format"} {
		for _, re := range versionPhrases {
			if m := re.FindString(text); m != "" {
				t.Errorf("%q: matched %q, want no version phrase", text, m)
			}
		}
	}
}
