package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/remote"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
)

// backendKind is one value of --backend. The list is in order of preference: "auto" takes the
// first whose open succeeds (a backend that cannot run on this machine returns an error).
// Adding a backend (ane, sim) means adding a line here.
type backendKind struct {
	name string
	help string
	open func(m *runtime.Model, o *modelFlags) (runtime.Backend, error)
}

var backends = []backendKind{
	aneBackend, // first: auto uses the Neural Engine where it opens (backends.go)
	{"cpu", "float32 forward pass, one thread per core (assembly kernels where the CPU has them)", openCPU},
	simBackend, // after cpu, which always opens: auto never picks the simulator
}

func openCPU(m *runtime.Model, o *modelFlags) (runtime.Backend, error) {
	return cpu.New(m, cpu.Options{Threads: o.threads, AMX: amxModes[o.amx], Cache: o.cacheType})
}

// amxModes are the values of --amx.
var amxModes = map[string]cpu.AMXMode{"auto": cpu.AMXAuto, "on": cpu.AMXOn, "off": cpu.AMXOff}

func backendNames() string {
	names := []string{"auto"}
	for _, b := range backends {
		names = append(names, b.name)
	}
	return strings.Join(names, ", ")
}

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
}

func (o *modelFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.backend, "backend", "auto", "where to run the model: "+backendNames())
	f.IntVarP(&o.threads, "threads", "t", 0, "CPU threads (0: one per physical core this process may run on, performance cores only on a hybrid CPU, as llama.cpp; see --cpus)")
	f.IntVarP(&o.ctx, "ctx", "c", 0, fmt.Sprintf("context length in tokens (0: %d, or the model's maximum if smaller; alias --ctx-size)", runtime.DefaultContext))
	f.StringVar(&o.amx, "amx", "auto", fmt.Sprintf("on a CPU with AMX (Xeon Sapphire Rapids and later), where fp16 and int8 prefill runs: on (AMX tiles), off (AVX-512), auto (AMX with at most %d threads)", cpu.AMXAutoThreads))
	f.StringVar(&o.cache, "cache-type", "f32", "the KV cache's element type: f32 (keys and values as computed, the output transformers computes in float32) or f16 (half the memory and half the cache reads of a long context, as llama.cpp's default; aliases --cache-type-k and --cache-type-v, which set the one type of both)")
	f.BoolVar(&o.mlock, "mlock", false, "read the bundle into memory in 2 MiB pages where the OS can (on Linux, re-reading it once if the page cache holds it in small pages) and pin it there (mlock), for steady speed; needs a memlock limit (ulimit -l) as large as the bundle")
	f.StringVar(&o.dtype, "dtype", "", "for a model name (Org/Name), the stored variant to run: f16 (default), f32, int8 or int4; the same as Org/Name:TAG")
	f.StringVar(&o.remote.Digest, "digest", "", "for an https:// bundle, its expected sha256 (sha256:<hex>)")
	f.BoolVar(&o.remote.PlainHTTP, "plain-http", false, "for an oci:// bundle, talk to the registry over plain http:// (local registries)")
	registerANEFlags(f)
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

func openBackend(m *runtime.Model, o *modelFlags) (runtime.Backend, error) {
	var failures []string
	for _, k := range backends {
		if o.backend != "auto" && o.backend != k.name {
			continue
		}
		b, err := k.open(m, o)
		if err == nil {
			return b, nil
		}
		if o.backend != "auto" {
			return nil, fmt.Errorf("backend %s: %w", k.name, err)
		}
		failures = append(failures, k.name+": "+err.Error())
	}
	if o.backend != "auto" {
		return nil, fmt.Errorf("--backend %q: expected one of %s", o.backend, backendNames())
	}
	return nil, fmt.Errorf("no backend can run this model: %s", strings.Join(failures, "; "))
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
