package hub

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as a download program: with HUB_TEST_CHILD set it
// downloads HUB_TEST_REPO from HF_ENDPOINT into HF_HUB_CACHE and exits, so
// tests can kill a real process mid-download, or measure one's memory.
func TestMain(m *testing.M) {
	if os.Getenv("HUB_TEST_CHILD") != "" {
		os.Exit(childDownload())
	}
	os.Exit(m.Run())
}

func childDownload() int {
	e, err := LoadEnv(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c := e.Client()
	c.Log = os.Stderr
	c.Backoff = Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond}
	if v := os.Getenv("HUB_TEST_CHUNK"); v != "" {
		c.ChunkSize, _ = strconv.ParseInt(v, 10, 64)
	}
	if v := os.Getenv("HUB_TEST_JOBS"); v != "" {
		c.Jobs, _ = strconv.Atoi(v)
	}
	s, err := c.Snapshot(context.Background(), os.Getenv("HUB_TEST_REPO"), "", PackFilter)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(s.Dir)
	if os.Getenv("HUB_TEST_MEMSTATS") != "" {
		// What the resident memory is made of, at exit (Linux only).
		st, _ := os.ReadFile("/proc/self/status")
		for _, l := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(l, "RssAnon") || strings.HasPrefix(l, "RssFile") || strings.HasPrefix(l, "Threads") {
				fmt.Fprintln(os.Stderr, strings.Join(strings.Fields(l), " "))
			}
		}
	}
	return 0
}

// childCmd prepares a child download of repo from endpoint into cache.
func childCmd(t testing.TB, endpoint, cache, repo string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HUB_TEST_CHILD=1", "HF_ENDPOINT="+endpoint, "HF_HUB_CACHE="+cache,
		"HF_HOME="+t.TempDir(), "HF_TOKEN=", "HUB_TEST_REPO="+repo, "HF_HUB_OFFLINE=0")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = &logBuf{t: t}
	return cmd
}
