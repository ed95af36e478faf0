package main

import (
	"strings"
	"testing"
)

// TestANEFlags: `anerun logits --backend sim --ane-check` reports every program's fp16
// headroom on stderr; the split blob layout gives the sim exactly the packed layout's logits;
// a bad --ane-blob-layout is refused.
func TestANEFlags(t *testing.T) {
	args := []string{"logits", bundle(t), "--ids", goldenIDs(t, 6), "--backend", "sim"}
	r := anerun(t, "", append(args, "--ane-check")...)
	if r.code != 0 {
		t.Fatalf("--ane-check: exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "fp16 headroom (every evaluation, in the simulator)") || !strings.Contains(r.stderr, "layers.0.attn_qkv.s32") ||
		!strings.Contains(r.stderr, "lm_head.") || !strings.Contains(r.stderr, "x room") {
		t.Errorf("headroom report:\n%s", r.stderr)
	}
	packed := anerun(t, "", append(args, "--ane-blob-layout", "packed")...)
	split := anerun(t, "", append(args, "--ane-blob-layout", "split")...)
	if packed.code != 0 || split.code != 0 || packed.stdout != split.stdout || packed.stdout == "" {
		t.Errorf("packed (exit %d) and split (exit %d) logits differ:\n%s\n%s%s", packed.code, split.code, packed.stdout, split.stdout, split.stderr)
	}
	if r := anerun(t, "", append(args, "--ane-blob-layout", "tiled")...); r.code == 0 || !strings.Contains(r.stderr, `--ane-blob-layout "tiled"`) {
		t.Errorf("bad layout: exit %d: %s", r.code, r.stderr)
	}
}
