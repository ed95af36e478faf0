package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestTwoProcesses runs several processes that each name one bundle, drop the name again
// (which deletes the blob when no other name is left) and name it once more, many times, on
// one store. Without the store lock a removal can delete the blob right after another process
// named it; at the end every reference must still have its blob.
func TestTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const procs, rounds = 3, 40
	var wg sync.WaitGroup
	errs := make([]error, procs)
	outs := make([][]byte, procs)
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStoreProcess$")
			cmd.Env = append(os.Environ(), "STORE_HELPER_DIR="+dir, "STORE_HELPER_ID="+strconv.Itoa(i), "STORE_HELPER_ROUNDS="+strconv.Itoa(rounds))
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i := range procs {
		if errs[i] != nil {
			t.Fatalf("process %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != procs {
		t.Fatalf("List has %d entries, want %d: %+v", len(list), procs, list)
	}
	for _, e := range list {
		if e.Missing || e.Reference == "" {
			t.Errorf("after the race: %+v", e)
		}
	}
}

// TestHelperStoreProcess is the child of TestTwoProcesses.
func TestHelperStoreProcess(t *testing.T) {
	dir := os.Getenv("STORE_HELPER_DIR")
	if dir == "" {
		return // not a child: nothing to do
	}
	id := os.Getenv("STORE_HELPER_ID")
	rounds, _ := strconv.Atoi(os.Getenv("STORE_HELPER_ROUNDS"))
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	hookBeforeBlobRemoval = func() { time.Sleep(3 * time.Millisecond) }
	ctx := context.Background()
	ref := fmt.Sprintf("proc-%s", id)
	for r := 0; r <= rounds; r++ {
		tmp, dg := blob(t, s, 64<<10, 99) // the same bundle in every process
		if _, err := s.InstallHashed(ctx, tmp, Entry{Reference: ref, Digest: dg}); err != nil {
			t.Fatal(err)
		}
		// While this process's reference exists nobody may delete the blob.
		time.Sleep(time.Millisecond)
		if !s.Has(dg) {
			t.Fatalf("round %d: the blob vanished while %s named it", r, ref)
		}
		if r == rounds {
			break
		}
		if _, err := s.Remove(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
}
