package affinity

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestPinEveryThread pins a child process (this test binary again) to one CPU, then has it
// start threads of its own (goroutines locked to new OS threads): every thread, those from
// before Pin and those after, must report that CPU alone in /proc/self/task/*/status.
func TestPinEveryThread(t *testing.T) {
	if cpu := os.Getenv("AFFINITY_TEST_CHILD"); cpu != "" {
		pinChild(cpu)
		return
	}
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	target := allowed[len(allowed)-1]
	cmd := exec.Command(os.Args[0], "-test.run", "^TestPinEveryThread$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("AFFINITY_TEST_CHILD=%d", target))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var lists []string
	for line := range strings.Lines(string(out)) {
		if l, ok := strings.CutPrefix(line, "thread "); ok {
			lists = append(lists, strings.TrimSpace(l))
		}
	}
	if len(lists) < 5 {
		t.Fatalf("the child reported %d threads:\n%s", len(lists), out)
	}
	for _, l := range lists {
		if !strings.HasSuffix(l, fmt.Sprintf(": %d", target)) {
			t.Errorf("a thread is allowed on %s, want only CPU %d", l, target)
		}
	}
}

// pinChild is the child's side: Pin, start four more threads, print every thread's allowed
// CPUs.
func pinChild(cpu string) {
	cpus, err := Parse(cpu)
	if err == nil {
		err = Pin(cpus)
	}
	if err != nil {
		fmt.Println("pin:", err)
		os.Exit(1)
	}
	var started, release sync.WaitGroup
	release.Add(1)
	for range 4 {
		started.Add(1)
		go func() {
			runtime.LockOSThread() // this goroutine's thread is never reused, so more threads start
			started.Done()
			release.Wait()
		}()
	}
	started.Wait()
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for line := range strings.Lines(string(b)) {
			if l, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				fmt.Printf("thread %s: %s\n", filepath.Base(filepath.Dir(f)), strings.TrimSpace(l))
			}
		}
	}
	release.Done()
}
