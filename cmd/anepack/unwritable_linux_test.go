package main

import (
	"strings"
	"testing"
)

// TestOutputUnwritable: an output directory that exists but takes no new file (procfs refuses
// file creation even to root, which every other permission test would not stop) is refused
// before the Hub is asked anything.
func TestOutputUnwritable(t *testing.T) {
	srv, _, _ := tinyHub(t)
	srv.ResetRequests()
	_, errOut, code := run(t, "Org/Tiny-Model", "-o", "/proc/self/x.aneb")
	if code == 0 || !strings.Contains(errOut, "output /proc/self/x.aneb: cannot write in /proc/self") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests to the Hub before refusing", n)
	}
}
