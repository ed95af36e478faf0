//go:build unix

package format

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv selects what the re-executed test binary does in the tests that need a process of
// their own (a signal, a resource limit).
const childEnv = "ANEPACK_FORMAT_TEST_CHILD"

// startChild starts this test binary running only test, in child mode, with the output
// directory dir.
func startChild(t *testing.T, test, mode, dir string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "ANEPACK_FORMAT_TEST_DIR="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewReader(out)
}

// TestCtrlC writes a big bundle in a child process, interrupts it with SIGINT (and, as a closed
// terminal would, with SIGHUP, which used to kill it and leave its temporary file), and checks
// that neither the bundle nor its temporary file remains.
func TestCtrlC(t *testing.T) {
	if os.Getenv(childEnv) == "sigint" {
		os.Exit(sigintChild(os.Getenv("ANEPACK_FORMAT_TEST_DIR")))
	}
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cmd, out := startChild(t, "TestCtrlC", "sigint", dir)
			defer cmd.Process.Kill()
			for {
				line, err := out.ReadString('\n')
				if err != nil {
					t.Fatalf("child ended before writing: %v", err)
				}
				if line == "WRITING\n" {
					break
				}
			}
			names := dirNames(t, dir)
			if len(names) != 1 || !strings.HasPrefix(names[0], ".big.aneb.tmp-") {
				t.Fatalf("while the child writes, directory holds %q; want its temporary file", names)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			rest, _ := out.ReadString(0)
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Fatalf("child exit: %v; want status 130 (aborted); output:\n%s", err, rest)
			}
			if !strings.Contains(rest, ErrAborted.Error()) {
				t.Errorf("child output %q does not report the abort", rest)
			}
			if names := dirNames(t, dir); len(names) != 0 {
				t.Errorf("after %v, directory holds %q", sig, names)
			}
		})
	}
}

// sigintChild writes up to 1 GiB into dir/big.aneb with AbortOnSignal installed, announcing
// "WRITING" once 16 MiB are out. It exits 130 when the write fails because of the abort, the
// way anepack exits on Ctrl-C.
func sigintChild(dir string) int {
	w, err := Create(filepath.Join(dir, "big.aneb"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	stop := AbortOnSignal(w)
	defer stop()
	defer w.Abort()
	sw, err := w.Begin(KindBlob, "blob/big")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	chunk := make([]byte, 1<<20)
	deadline := time.Now().Add(time.Minute)
	for i := 0; i < 1024 && time.Now().Before(deadline); i++ {
		if i == 16 {
			fmt.Println("WRITING")
		}
		if _, err := sw.Write(chunk); err != nil {
			fmt.Println(err)
			if errors.Is(err, ErrAborted) {
				return 130
			}
			return 1
		}
		if i >= 16 {
			time.Sleep(time.Millisecond) // leave the parent time to signal before 1 GiB is out
		}
	}
	fmt.Println("finished without being interrupted")
	return 0
}

// TestAbortOnSignalStop checks that a stopped handler no longer aborts: the signal is then
// delivered only to the test's own listener.
func TestAbortOnSignalStop(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "m.aneb"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	stop := AbortOnSignal(w, syscall.SIGUSR1)
	stop()
	stop()
	own := make(chan os.Signal, 1)
	signal.Notify(own, syscall.SIGUSR1)
	defer signal.Stop(own)
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	<-own
	if _, err := w.Add(KindFile, "file/a", []byte("a")); err != nil {
		t.Errorf("writer aborted by a stopped handler: %v", err)
	}

	stop = AbortOnSignal(w, syscall.SIGUSR1)
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	<-own
	deadline := time.Now().Add(5 * time.Second)
	for !w.aborted.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if _, err := w.Add(KindFile, "file/b", nil); !errors.Is(err, ErrAborted) {
		t.Errorf("after the signal, Add = %v; want ErrAborted", err)
	}
}
