package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPerplexityBinary runs `anerun perplexity --json` on a text file with the bundle as its own
// reference (KL 0, full agreement), and checks the errors of a missing --file.
func TestPerplexityBinary(t *testing.T) {
	text := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := anerun(t, "", "perplexity", bundle(t), "--file", text, "--ctx", "64", "--chunks", "2", "--reference", bundle(t), "--backend", "cpu", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var res struct {
		Perplexity    *float64 `json:"perplexity"`
		KL            *float64 `json:"kl_divergence"`
		KLP99         *float64 `json:"kl_divergence_p99"`
		Top1Agreement *float64 `json:"top1_agreement"`
		Tokens        *int     `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if res.Perplexity == nil || res.KL == nil || res.KLP99 == nil || res.Top1Agreement == nil || res.Tokens == nil {
		t.Fatalf("output lacks a field: %s", r.stdout)
	}
	if !(*res.Perplexity > 1) || *res.Tokens != 2*31 || *res.KL > 1e-9 || *res.Top1Agreement != 1 {
		t.Errorf("result %s", r.stdout)
	}
	if r := anerun(t, "", "perplexity", bundle(t)); r.code == 0 || !strings.Contains(r.stderr, "--file") {
		t.Errorf("no --file: exit %d, %s", r.code, r.stderr)
	}
}
