package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/anepack/anepack/internal/acquire"
	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/internal/modelname"
	"github.com/anepack/anepack/remote"
	"github.com/anepack/anepack/store"
)

// resolve turns a MODEL argument into the path of a bundle to map. In order:
//
//   - a reference (oci://, hf://, https://) is pulled into the store on first use and verified
//     (with --digest and --plain-http);
//   - an existing file is used as it is (a GGUF file is refused with what to do instead);
//   - a name (Org/Name[:tag], or the name a bundle was imported or packed under) is looked up
//     in the store; the variant is the tag, or --dtype, or f16;
//   - a Hugging Face repo id the store does not hold is fetched (into the Hugging Face cache,
//     or from it), packed and stored under its name, once: the next run starts from the store
//     and makes no request.
//
// Ctrl-C during a download or a pack stops it cleanly (nothing half-written is kept but the
// resumable downloads) and exits 130.
func (o *modelFlags) resolve(arg string) (string, error) {
	ctx, stop := cli.SignalContext(context.Background())
	defer stop()
	r, err := remote.ParseRef(arg)
	if err != nil {
		return "", err
	}
	if r.IsRemote() {
		if o.dtype != "" {
			return "", fmt.Errorf("--dtype picks the variant of a model name (Org/Name); %s names one bundle", arg)
		}
		opts, err := o.remote.Options(os.Stdin, cli.Stderr(), remoteProgress)
		if err != nil {
			return "", err
		}
		return remote.Resolve(ctx, arg, opts)
	}
	if o.remote.Digest != "" || o.remote.PlainHTTP {
		return "", fmt.Errorf("--digest and --plain-http apply to a reference (https://, oci://); %s is not one", arg)
	}
	path := r.File
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			// The folder a model was packed from may be named like the model, in the
			// directory anerun runs in: the stored bundle is what was meant.
			if n, ok, _ := modelname.Parse(arg, o.dtype); ok {
				if s, err := o.findStored(ctx, n); err == nil {
					return s, nil
				}
			}
			return "", fmt.Errorf("%s is a directory, expected a .aneb bundle (pack it first: anepack %s)", path, path)
		}
		if err := acquire.CheckNotGGUF(path); err != nil {
			return "", err
		}
		if o.dtype != "" {
			return "", fmt.Errorf("--dtype picks the variant of a model name (Org/Name); %s is a bundle file", arg)
		}
		return path, nil
	}
	if err := acquire.CheckNotGGUF(path); err != nil {
		return "", err
	}
	n, ok, err := modelname.Parse(arg, o.dtype)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%s: no such file (for a remote bundle use oci://, hf:// or https://; for a Hugging Face model its id, Org/Name)", path)
	}
	p, err := o.findStored(ctx, n)
	if err == nil {
		return p, nil
	}
	var ce *store.CorruptError
	switch {
	case errors.As(err, &ce):
		fmt.Fprintf(cli.Stderr(), "anerun: %v; packing it again\n", err)
	case !errors.Is(err, store.ErrNotFound):
		return "", err
	}
	if !n.IsRepo() {
		return "", fmt.Errorf("%s: no such file, and the store has no model named %s (`anerun list` shows what it has); a Hugging Face model is named Org/Name, e.g. Qwen/Qwen2.5-0.5B-Instruct", arg, n)
	}
	return o.fetchAndPack(ctx, n, "")
}

// findStored returns the verified path of the bundle the store holds as n.
func (o *modelFlags) findStored(ctx context.Context, n modelname.Name) (string, error) {
	st, err := store.OpenDefault()
	if err != nil {
		return "", err
	}
	st.Log = cli.Stderr()
	prog := cli.NewProgress("verifying "+n.String(), 0, true, false)
	s, err := acquire.Find(ctx, st, n, prog.Set)
	prog.Finish()
	if err != nil {
		return "", err
	}
	return s.Path, nil
}

// fetchAndPack fetches the repo n names from the Hugging Face Hub (or the Hugging Face cache),
// packs it and stores it as n; it returns the stored bundle's path.
func (o *modelFlags) fetchAndPack(ctx context.Context, n modelname.Name, revision string) (string, error) {
	st, err := store.OpenDefault()
	if err != nil {
		return "", err
	}
	st.Log = cli.Stderr()
	c, err := hubClient()
	if err != nil {
		return "", err
	}
	from := "fetching " + n.Model + " from the Hugging Face Hub"
	if c.Offline {
		from = "taking " + n.Model + " from the Hugging Face cache (offline)"
	}
	fmt.Fprintf(cli.Stderr(), "anerun: %s is not in the store yet: %s and packing it (once; later runs start from the store)\n", n, from)
	s, err := acquire.FetchAndPack(ctx, st, c, n, revision, display(false))
	if err != nil {
		return "", err
	}
	return s.Path, nil
}

// inStore reports whether the store holds a model named s (with the default tag when s has
// none), without creating or locking anything.
func inStore(s string) bool {
	n, ok, err := modelname.Parse(s, "")
	if !ok || err != nil {
		return false
	}
	dir, err := store.DefaultDir()
	if err != nil {
		return false
	}
	st, err := store.OpenReadOnly(dir)
	if err != nil {
		return false
	}
	_, err = st.Lookup(n.String())
	return err == nil
}
