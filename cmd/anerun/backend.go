package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/remote"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/ane"
	"github.com/anepack/anepack/runtime/backend"
	"github.com/anepack/anepack/runtime/cpu"
)

// amxModes are the values of --amx.
var amxModes = map[string]cpu.AMXMode{"auto": cpu.AMXAuto, "on": cpu.AMXOn, "off": cpu.AMXOff}

// modelFlags are the flags of every command that runs a model: which bundle (resolve.go), and
// where and how to run it.
type modelFlags struct {
	backend   string
	threads   int
	ctx       int
	mlock     bool
	amx       string
	cache     string            // --cache-type
	cacheType runtime.CacheType // parsed from cache by load
	// dtype picks the stored variant of a model name (Org/Name:int4 and Org/Name --dtype int4
	// are the same).
	dtype string
	// remote holds --digest and --plain-http, for a bundle named by a reference.
	remote remote.Flags
	// The flags of the ane and sim backends.
	decodeOn, blobLayout, constexpr string
	aneCheck                        bool
}

func (o *modelFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.backend, "backend", backend.Auto, "where to run the model: "+strings.Join(backend.Names(), ", "))
	f.IntVarP(&o.threads, "threads", "t", 0, "CPU threads (0: one per physical core this process may run on, performance cores only on a hybrid CPU, as llama.cpp; see --cpus)")
	f.IntVarP(&o.ctx, "ctx", "c", 0, fmt.Sprintf("context length in tokens (0: %d, or the model's maximum if smaller; alias --ctx-size)", runtime.DefaultContext))
	f.StringVar(&o.amx, "amx", "auto", fmt.Sprintf("on a CPU with AMX (Xeon Sapphire Rapids and later), where fp16 and int8 prefill runs: on (AMX tiles), off (AVX-512), auto (AMX with at most %d threads)", cpu.AMXAutoThreads))
	f.StringVar(&o.cache, "cache-type", "f32", "the KV cache's element type: f32 (keys and values as computed, the output transformers computes in float32) or f16 (half the memory and half the cache reads of a long context, as llama.cpp's default; aliases --cache-type-k and --cache-type-v, which set the one type of both)")
	f.BoolVar(&o.mlock, "mlock", false, "read the bundle into memory in 2 MiB pages where the OS can (on Linux, re-reading it once if the page cache holds it in small pages) and pin it there (mlock), for steady speed; needs a memlock limit (ulimit -l) as large as the bundle")
	f.StringVar(&o.dtype, "dtype", "", "for a model name (Org/Name), the stored variant to run: f16 (default), f32, int8 or int4; the same as Org/Name:TAG")
	f.StringVar(&o.remote.Digest, "digest", "", "for an https:// bundle, its expected sha256 (sha256:<hex>)")
	f.BoolVar(&o.remote.PlainHTTP, "plain-http", false, "for an oci:// bundle, talk to the registry over plain http:// (local registries)")
	f.StringVar(&o.decodeOn, "decode-on", ane.DecodeANE,
		"with --backend ane or sim, where decode steps run: ane (the S=32 programs, one live column) or cpu (float32 GEMVs; needs fewer ANE compiles)")
	f.BoolVar(&o.aneCheck, "ane-check", false,
		"with --backend ane or sim, compare each program's first evaluation with the MIL simulator and stop at the first that differs; report each program's fp16 headroom")
	f.StringVar(&o.blobLayout, "ane-blob-layout", backend.Auto,
		"with --backend ane or sim, how weight files reach the compiler: packed (the bundle's files), split (one tensor per file, which M1 is reported to need) or auto (what this machine's self-test found; packed elsewhere)")
	f.StringVar(&o.constexpr, "ane-constexpr", backend.Auto,
		"with --backend ane or sim and an int8/int4 bundle, how quantized weights reach the compiler: native (MIL constexpr ops), expand (to fp16 at compile time) or auto (what anerun doctor --probe found on this machine; expand on the ANE until then, native in the simulator)")
}

// optionFlags names the flag that sets each field of backend.Options, for its errors.
var optionFlags = map[string]string{"Backend": "--backend", "DecodeOn": "--decode-on", "BlobLayout": "--ane-blob-layout", "Constexpr": "--ane-constexpr"}

// openBackend opens m on the backend the flags ask for (backend.Open); on Apple Silicon it says
// in one line why auto ran on the CPU. --backend auto runs the ANE self-test, the first time on
// an OS build, in a child process: `anerun doctor --self-test`.
func openBackend(m *runtime.Model, o *modelFlags) (runtime.Backend, error) {
	opts := backend.Options{Backend: o.backend, Threads: o.threads, Cache: o.cacheType, AMX: amxModes[o.amx],
		DecodeOn: o.decodeOn, Check: o.aneCheck, BlobLayout: o.blobLayout, Constexpr: o.constexpr}
	if exe, err := os.Executable(); err == nil {
		opts.SelfTest = backend.ChildSelfTest(exe, "doctor", "--self-test")
	} else {
		opts.SelfTest = func() ane.SelfTestRecord {
			return ane.SelfTestRecord{Reason: "cannot find the anerun executable to run the self-test in: " + err.Error()}
		}
	}
	b, c, err := backend.Open(m, opts)
	var oe *backend.OptionError
	if errors.As(err, &oe) {
		return nil, fmt.Errorf("%s %q: expected one of %s", optionFlags[oe.Field], oe.Value, strings.Join(oe.Expected, ", "))
	}
	if err != nil {
		return nil, err
	}
	if c.Notice != "" {
		fmt.Fprintln(os.Stderr, "anerun: "+c.Notice)
	}
	return b, nil
}

// loaded is an open model on a backend.
type loaded struct {
	model   *runtime.Model
	backend runtime.Backend
	threads int  // the threads the backend uses, for reports; 0 when not applicable
	amx     bool // prefill runs on AMX tiles (cpu.Backend.AMXPrefill)
}

func (l *loaded) Close() {
	l.backend.Close()
	l.model.Close()
}

// load opens the bundle MODEL names (see resolve) and the backend the flags ask for.
func load(path string, o *modelFlags) (*loaded, error) {
	if o.threads < 0 {
		return nil, fmt.Errorf("--threads %d: expected 0 (one per core) or a positive number", o.threads)
	}
	if o.threads == 0 {
		o.threads = defaultThreads()
	}
	if o.ctx < 0 {
		return nil, fmt.Errorf("--ctx %d: expected 0 (default) or a positive number", o.ctx)
	}
	if _, ok := amxModes[o.amx]; !ok {
		return nil, fmt.Errorf("--amx %q: expected auto, on or off", o.amx)
	}
	ct, err := runtime.ParseCacheType(o.cache)
	if err != nil {
		return nil, fmt.Errorf("--cache-type: %w", err)
	}
	o.cacheType = ct
	path, err = o.resolve(path)
	if err != nil {
		return nil, err
	}
	m, err := runtime.Open(path)
	if err != nil {
		return nil, err
	}
	if o.mlock {
		if err := placeAndLock(m.Bundle(), path); err != nil {
			m.Close()
			return nil, err
		}
	}
	if o.ctx > m.Config.MaxPositionEmbeddings {
		m.Close()
		return nil, fmt.Errorf("--ctx %d exceeds the model's maximum context of %d tokens (max_position_embeddings)", o.ctx, m.Config.MaxPositionEmbeddings)
	}
	b, err := openBackend(m, o)
	if err != nil {
		m.Close()
		return nil, err
	}
	l := &loaded{model: m, backend: b}
	if t, ok := b.(interface{ Threads() int }); ok {
		l.threads = t.Threads()
	}
	if a, ok := b.(interface{ AMXPrefill() bool }); ok {
		l.amx = a.AMXPrefill()
	}
	return l, nil
}

// placeAndLock is --mlock: the bundle resident in huge pages where possible (saying so when it
// had to re-read the file for that), then pinned.
func placeAndLock(b *format.Bundle, path string) error {
	before, after, err := b.PlaceHuge()
	if err != nil {
		return err
	}
	if after != before {
		fmt.Fprintf(os.Stderr, "anerun: re-read %s into 2 MiB pages: %d%% of it in them before, %d%% now\n",
			path, 100*before/max(1, b.Size()), 100*after/max(1, b.Size()))
	}
	return b.Lock()
}
