package transfer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anepack/anepack/internal/stall"
)

// memSource serves a byte slice with scripted misbehaviour.
type memSource struct {
	data []byte
	mu   sync.Mutex
	// cutAt cuts the body of the first matching request after this many bytes (once per entry).
	cuts []int64
	// ignoreRange answers every ranged request with the whole file (200).
	ignoreRange bool
	// wholeAfter answers ranged requests with 200 once this many have been answered 206.
	wholeAfter int
	// failing answers every request with a transient error.
	failing error
	ranged  int
	reqs    []string
}

func (s *memSource) Get(ctx context.Context, off, end int64) (io.ReadCloser, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if end < 0 {
		end = int64(len(s.data))
	}
	s.reqs = append(s.reqs, fmt.Sprintf("%d-%d", off, end))
	if s.failing != nil {
		return nil, false, s.failing
	}
	ranged := off > 0 || end < int64(len(s.data))
	if ranged && (s.ignoreRange || (s.wholeAfter > 0 && s.ranged >= s.wholeAfter)) {
		return io.NopCloser(bytes.NewReader(s.data)), false, nil
	}
	if ranged {
		s.ranged++
	}
	body := s.data[off:end]
	if len(s.cuts) > 0 {
		body = body[:min(int64(len(body)), s.cuts[0])]
		s.cuts = s.cuts[1:]
		return io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{io.ErrUnexpectedEOF})), ranged, nil
	}
	return io.NopCloser(bytes.NewReader(body)), ranged, nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func testData(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i>>8)
	}
	return b
}

func newTransfer(t *testing.T, src Source, size, chunk int64) *Transfer {
	dir := t.TempDir()
	return &Transfer{
		Source: src, Path: filepath.Join(dir, "f.part"), StatePath: filepath.Join(dir, "f.part.json"),
		ID: "test", Size: size, Units: Chunks(size, chunk), Jobs: 4, Retries: 3,
		Sleep: func(context.Context, time.Duration) error { return nil },
	}
}

func check(t *testing.T, tr *Transfer, res Result, data []byte) {
	t.Helper()
	want := sha256.Sum256(data)
	if len(res.Sums) != 1 || !bytes.Equal(res.Sums[0], want[:]) {
		t.Fatalf("digest %x, want %x", res.Sums, want)
	}
	got, _ := os.ReadFile(tr.Path)
	if !bytes.Equal(got, data) {
		t.Fatal("the part file differs from the source")
	}
}

// TestChunksCutsAndProgress: a file in parallel chunks, two of them cut mid-way, arrives whole;
// the cut chunks resume where they stopped and the progress adds up to the size.
func TestChunksCutsAndProgress(t *testing.T) {
	data := testData(1 << 20)
	src := &memSource{data: data, cuts: []int64{1000, 5000}}
	tr := newTransfer(t, src, int64(len(data)), 256<<10)
	var mu sync.Mutex
	var progress int64
	tr.Progress = func(n int64) { mu.Lock(); progress += n; mu.Unlock() }
	res, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	check(t, tr, res, data)
	if progress != int64(len(data)) || res.Fetched != int64(len(data)) {
		t.Errorf("progress %d, fetched %d, want %d", progress, res.Fetched, len(data))
	}
	// Two cuts cost two more requests, each resuming where its body stopped: nothing is
	// fetched twice (Fetched counts every byte received).
	if len(src.reqs) != 6 {
		t.Errorf("requests %v: want 4 chunks and 2 resumes", src.reqs)
	}
}

// TestResumeFromState: a run cancelled part-way leaves a state; a new Transfer on the same files
// fetches only what is missing.
func TestResumeFromState(t *testing.T) {
	data := testData(1 << 20)
	src := &memSource{data: data, failing: &Transient{Err: errors.New("down")}}
	tr := newTransfer(t, src, int64(len(data)), 256<<10)
	// Write the first chunk and a part of the second by hand, as a killed run would have, with
	// its state.
	first := newTransfer(t, &memSource{data: data, cuts: []int64{256 << 10, 100}}, int64(len(data)), 256<<10)
	first.Path, first.StatePath, first.Retries, first.Jobs = tr.Path, tr.StatePath, 0, 1
	if _, err := first.Run(context.Background()); err == nil {
		t.Fatal("the cut run succeeded")
	}
	st, err := ReadState(tr.StatePath)
	if err != nil || len(st.Units) != 4 || st.Units[0][2] != 256<<10 {
		t.Fatalf("state %+v, %v", st, err)
	}
	src.failing = nil
	var resumed int64
	tr.Resumed = func(n int64) { resumed = n }
	res, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	check(t, tr, res, data)
	if resumed != res.Resumed || res.Resumed+res.Fetched != int64(len(data)) || src.reqs[len(src.reqs)-3] != fmt.Sprintf("%d-%d", 256<<10+st.Units[1][2], 512<<10) {
		t.Errorf("resumed %d, fetched %d, requests %v", res.Resumed, res.Fetched, src.reqs)
	}
}

// TestIgnoredRange: a server that answers Range with the whole file is read in one stream,
// logged; one that does so after honouring ranges has changed the file (ErrChanged).
func TestIgnoredRange(t *testing.T) {
	data := testData(300 << 10)
	src := &memSource{data: data, ignoreRange: true}
	tr := newTransfer(t, src, int64(len(data)), 64<<10)
	var log bytes.Buffer
	tr.Logf = func(format string, args ...any) { fmt.Fprintf(&log, format+"\n", args...) }
	res, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	check(t, tr, res, data)
	if len(src.reqs) != 1 || !bytes.Contains(log.Bytes(), []byte("ignored the Range")) {
		t.Errorf("requests %v, log %q", src.reqs, log.String())
	}
	changed := &memSource{data: data, wholeAfter: 2}
	tr = newTransfer(t, changed, int64(len(data)), 64<<10)
	tr.Jobs = 1
	if _, err := tr.Run(context.Background()); !errors.Is(err, ErrChanged) {
		t.Errorf("a 200 after 206s: %v, want ErrChanged", err)
	}
}

// TestGiveUp: a source that keeps failing exhausts the retries with the server's wait, and the
// error keeps the last failure; a stall is retried but is no progress.
func TestGiveUp(t *testing.T) {
	data := testData(10 << 10)
	src := &memSource{data: data, failing: &Transient{Err: errors.New("HTTP 503"), Wait: 7 * time.Second}}
	tr := newTransfer(t, src, int64(len(data)), 0)
	var waits []time.Duration
	tr.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	_, err := tr.Run(context.Background())
	var gu *GiveUpError
	if !errors.As(err, &gu) || gu.Attempts != 4 || len(waits) != 3 || waits[0] != 7*time.Second {
		t.Fatalf("err %v, waits %v", err, waits)
	}
	if !transient(fmt.Errorf("%w: no data for 1s", stall.ErrStalled)) || transient(errors.New("HTTP 404")) {
		t.Error("classification of stalls and plain errors")
	}
}
