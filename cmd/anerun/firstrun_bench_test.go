package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/anepack/anepack/hub/hubtest"
	"github.com/anepack/anepack/internal/qwentok"
	"github.com/anepack/anepack/runtime/testmodel"
	"github.com/anepack/anepack/synth"
)

// ttftRE is --verbose's time to the first token: from the prompt (prefill) and from the start
// of the process.
var ttftRE = regexp.MustCompile(`time to first token: ([0-9.]+) ms \(([0-9.]+) ms since anerun started\)`)

// BenchmarkFirstToken measures what a new user waits for: the time from starting
// `anerun Org/Qwen2.5-0.5B "hi"` to its first token, on the full-size Qwen2.5-0.5B shape
// (SYNTH-1 weights, 988 MB of BF16) served by the fake Hub on loopback. Each iteration starts
// from an empty Hugging Face cache and an empty store: the first run downloads, packs, stores
// and answers; the second starts from the store. Reported: first-ms and second-ms (each the
// time to the first token since the process started, as --verbose prints it), and of the
// second, second-prefill-ms (the prompt's prefill; the rest is starting and loading).
//
//	go test ./cmd/anerun -run '^$' -bench FirstToken -benchtime 1x -count 5
func BenchmarkFirstToken(b *testing.B) {
	cfgPath, err := testmodel.Config("qwen2.5-0.5b")
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		b.Fatal(err)
	}
	tokFiles, err := qwentok.Files()
	if err != nil {
		b.Fatal(err)
	}
	ck := filepath.Join(b.TempDir(), "Qwen2.5-0.5B")
	if err := synth.WriteCheckpoint(context.Background(), ck, cfg, tokFiles, synth.Options{Seed: 1}); err != nil {
		b.Fatal(err)
	}
	ents, err := os.ReadDir(ck)
	if err != nil {
		b.Fatal(err)
	}
	var files []hubtest.File
	for _, e := range ents {
		files = append(files, hubtest.File{Path: e.Name(), Disk: filepath.Join(ck, e.Name())})
	}
	srv := hubtest.New(b, hubtest.Options{})
	srv.MustAddRepo(b, hubtest.Repo{ID: "Org/Qwen2.5-0.5B", Files: files})
	b.Setenv("HF_ENDPOINT", srv.URL)
	b.Setenv("HF_TOKEN", "")
	b.Setenv("HF_HUB_OFFLINE", "")
	runLimit = 10 * time.Minute
	var first, second, prefill float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cache, home := b.TempDir(), b.TempDir()
		b.Setenv("HF_HUB_CACHE", cache)
		b.Setenv("HF_HOME", b.TempDir())
		b.Setenv("ANEPACK_HOME", home)
		b.StartTimer()
		f, _ := firstTokenMs(b, "Org/Qwen2.5-0.5B")
		s, p := firstTokenMs(b, "Org/Qwen2.5-0.5B")
		first, second, prefill = first+f, second+s, prefill+p
		b.StopTimer()
		os.RemoveAll(cache)
		os.RemoveAll(home)
		b.StartTimer()
	}
	b.ReportMetric(first/float64(b.N), "first-ms")
	b.ReportMetric(second/float64(b.N), "second-ms")
	b.ReportMetric(prefill/float64(b.N), "second-prefill-ms")
}

// firstTokenMs runs `anerun model "hi" -n 1 --verbose --backend cpu` and returns its time to the
// first token since the process started, and the prefill's part of it.
func firstTokenMs(b *testing.B, model string) (sinceStart, prefill float64) {
	b.Helper()
	r := anerun(b, "", model, "hi", "-n", "1", "--verbose", "--backend", "cpu")
	if r.code != 0 {
		b.Fatalf("anerun %s: exit %d: %s", model, r.code, r.stderr)
	}
	if testing.Verbose() {
		b.Logf("anerun %s:\n%s", model, r.stderr) // where the first run's time goes
	}
	m := ttftRE.FindStringSubmatch(r.stderr)
	if m == nil {
		b.Fatalf("no time to first token in:\n%s", r.stderr)
	}
	prefill, err1 := strconv.ParseFloat(m[1], 64)
	sinceStart, err2 := strconv.ParseFloat(m[2], 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("time to first token %q: %v %v", m[0], err1, err2)
	}
	return sinceStart, prefill
}
