package backend

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/mil"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/ane"
	"github.com/anepack/anepack/runtime/testmodel"
)

// open opens the tiny test model (or, with noPrograms, a copy without ANE programs).
func open(t *testing.T, noPrograms bool) *runtime.Model {
	t.Helper()
	path := testmodel.Bundle(t, "qwen2-tiny", "f16")
	if noPrograms {
		dst := filepath.Join(t.TempDir(), "noane.aneb")
		if err := testmodel.Rewrite(path, dst, func(m *format.Manifest) { m.Programs = nil }); err != nil {
			t.Fatal(err)
		}
		path = dst
	}
	m, err := runtime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestOptionErrors: every option holding a value it does not take is an *OptionError naming
// the field and the values it takes, whichever backend would run (the CPU never reads the ANE
// options, and auto must not pass over a typo either).
func TestOptionErrors(t *testing.T) {
	m := open(t, false)
	for _, c := range []struct {
		o     Options
		field string
		want  string
	}{
		{Options{Backend: "gpu"}, "Backend", `Options.Backend "gpu": expected one of auto, ane, cpu, sim`},
		{Options{Backend: CPU, DecodeOn: "gpu"}, "DecodeOn", `expected one of ane, cpu`},
		{Options{BlobLayout: "tiled"}, "BlobLayout", `Options.BlobLayout "tiled": expected one of auto, packed, split`},
		{Options{Backend: Sim, Constexpr: "lazy"}, "Constexpr", `expected one of auto, native, expand`},
	} {
		b, _, err := Open(m, c.o)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Field != c.field || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want an OptionError on %s saying %q", c.o, err, c.field, c.want)
		}
		if b != nil {
			b.Close()
		}
	}
}

// TestOpenNamed: a named backend opens as asked, or fails saying which; its Choice gives no
// reason.
func TestOpenNamed(t *testing.T) {
	m := open(t, false)
	for _, name := range []string{CPU, Sim} {
		b, c, err := Open(m, Options{Backend: name, Threads: 1})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c != (Choice{Name: name}) || b.Name() != name {
			t.Errorf("%s: choice %+v, backend %q", name, c, b.Name())
		}
		b.Close()
	}
	if _, _, err := Open(open(t, true), Options{Backend: Sim}); !errors.Is(err, ane.ErrNoPrograms) || !strings.HasPrefix(err.Error(), "backend sim: ") {
		t.Errorf("sim without programs: %v", err)
	}
	if !onApple() {
		if _, _, err := Open(m, Options{Backend: ANE}); err == nil || !strings.Contains(err.Error(), "backend ane: ") || !strings.Contains(err.Error(), "not available") {
			t.Errorf("ane off Apple Silicon: %v", err)
		}
	}
}

// TestOpenAuto: off Apple Silicon auto runs on the CPU saying the ANE is not available, and
// tells the user nothing unasked; a bundle without programs says so. The self-test runner is
// never called where there is no ANE.
func TestOpenAuto(t *testing.T) {
	if onApple() {
		t.Skip("on Apple Silicon auto depends on this machine's ANE; TestDecideAuto in runtime/ane covers the decision")
	}
	o := Options{Threads: 1, SelfTests: ane.DefaultSelfTestCache(t.TempDir()),
		SelfTest: func() ane.SelfTestRecord { t.Error("the self-test ran without an ANE"); return ane.SelfTestRecord{} }}
	for _, c := range []struct {
		noPrograms bool
		reason     string
	}{{false, "the ANE is not available: not an Apple Silicon Mac"}, {true, ane.ErrNoPrograms.Error()}} {
		b, ch, err := Open(open(t, c.noPrograms), o)
		if err != nil {
			t.Fatal(err)
		}
		if ch.Name != CPU || !strings.Contains(ch.Reason, c.reason) || ch.Notice != "" || b.Name() != CPU {
			t.Errorf("no programs %v: choice %+v, backend %q; want cpu because %q", c.noPrograms, ch, b.Name(), c.reason)
		}
		b.Close()
	}
}

// TestAutoOptions: BlobLayout and Constexpr take a named value as it is; auto is, on the ANE,
// what this OS build's record says (the defaults where it says nothing), and in the simulator
// packed and native.
func TestAutoOptions(t *testing.T) {
	o := Options{SelfTests: ane.DefaultSelfTestCache(t.TempDir())}
	if l, c := o.blobLayout(ane.EvalANE), o.constexpr(ane.EvalANE); l != mil.LayoutPacked || c != ane.ConstexprExpand {
		t.Errorf("no record: layout %q, constexpr %q; want packed, expand", l, c)
	}
	// Record a self-test of this machine's OS build and chip, as DecideAuto would on an ANE.
	host := ane.Probe()
	host.Available = true
	ane.DecideAuto(host, o.SelfTests, func() ane.SelfTestRecord {
		return ane.SelfTestRecord{Passed: true, BlobLayout: mil.LayoutSplit, Constexpr: ane.ConstexprNative}
	})
	if l, c := o.blobLayout(ane.EvalANE), o.constexpr(ane.EvalANE); l != mil.LayoutSplit || c != ane.ConstexprNative {
		t.Errorf("recorded split and native: layout %q, constexpr %q", l, c)
	}
	if l, c := o.blobLayout(ane.EvalSim), o.constexpr(ane.EvalSim); l != mil.LayoutPacked || c != ane.ConstexprNative {
		t.Errorf("simulator: layout %q, constexpr %q; want packed, native", l, c)
	}
	o.BlobLayout, o.Constexpr = mil.LayoutPacked, ane.ConstexprExpand
	if l, c := o.blobLayout(ane.EvalANE), o.constexpr(ane.EvalANE); l != mil.LayoutPacked || c != ane.ConstexprExpand {
		t.Errorf("named packed and expand: layout %q, constexpr %q", l, c)
	}
}

// TestPredict: what doctor says auto picks follows Open's order.
func TestPredict(t *testing.T) {
	up := ane.Report{Available: true}
	for _, c := range []struct {
		host        ane.Report
		hasPrograms bool
		rec         *ane.SelfTestRecord
		name, why   string
	}{
		{ane.Report{Reason: "not an Apple Silicon Mac"}, true, nil, CPU, "not available: not an Apple Silicon Mac"},
		{up, false, nil, CPU, "no ANE programs"},
		{up, true, nil, ANE, "if the ANE self-test passes"},
		{up, true, &ane.SelfTestRecord{Reason: "wrong result"}, CPU, "failed on this OS build: wrong result"},
		{up, true, &ane.SelfTestRecord{Passed: true}, ANE, "passed"},
	} {
		if name, why := Predict(c.host, c.hasPrograms, c.rec); name != c.name || !strings.Contains(why, c.why) {
			t.Errorf("%+v, %v, %+v: %s (%s); want %s (%s)", c.host, c.hasPrograms, c.rec, name, why, c.name, c.why)
		}
	}
}

// TestChildSelfTest runs the self-test's child side the way auto does: a child that aborts
// after the Objective-C runtime's report of an exception (what an exception inside the
// framework does to a process) and one that prints something else both give a failed record
// saying why.
func TestChildSelfTest(t *testing.T) {
	rec := ChildSelfTest("/bin/sh", "-c", `echo "2025-03-01 anerun[123:456] *** Terminating app due to uncaught exception 'NSInvalidArgumentException'" >&2; echo "libc++abi: terminating" >&2; kill -ABRT $$`)()
	if rec.Passed || !strings.Contains(rec.Reason, "the self-test process died (signal: aborted)") || !strings.Contains(rec.Reason, "uncaught exception 'NSInvalidArgumentException'") {
		t.Errorf("aborting child: %+v", rec)
	}
	rec = ChildSelfTest("/bin/sh", "-c", "echo PASS")()
	if rec.Passed || !strings.Contains(rec.Reason, "printed no record") {
		t.Errorf("garbage child: %+v", rec)
	}
}
