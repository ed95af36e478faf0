package remote

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// Flags are the command-line flags shared by the commands that pull (anerun pull, anerun
// REF "prompt") and push (anepack push), so every command spells them the same way.
type Flags struct {
	Username      string
	PasswordStdin bool
	PlainHTTP     bool
	Digest        string
	Jobs          int
	Quiet         bool
	// Push only.
	Compress string
	Private  bool
	Message  string
}

// RegisterPull adds the flags of commands that fetch a bundle.
func (f *Flags) RegisterPull(fs *pflag.FlagSet) {
	f.registerCommon(fs)
	fs.StringVar(&f.Digest, "digest", "", "expected sha256 of an https:// bundle (sha256:<hex>)")
}

// RegisterPush adds the flags of anepack push.
func (f *Flags) RegisterPush(fs *pflag.FlagSet) {
	f.registerCommon(fs)
	fs.StringVar(&f.Compress, "compress", "auto", "OCI transport compression: auto (zstd frames when they save more than 10%), never, always")
	fs.BoolVar(&f.Private, "private", false, "create a missing hf:// repo as private")
	fs.StringVar(&f.Message, "message", "", "commit message of an hf:// push")
}

func (f *Flags) registerCommon(fs *pflag.FlagSet) {
	fs.StringVar(&f.Username, "username", "", "registry user name (with --password-stdin; default: the Docker credential store)")
	fs.BoolVar(&f.PasswordStdin, "password-stdin", false, "read the registry password (or token) from stdin")
	fs.BoolVar(&f.PlainHTTP, "plain-http", false, "talk to the OCI registry over plain http:// (local registries)")
	fs.IntVarP(&f.Jobs, "jobs", "j", DefaultJobs, "parallel transfers (ranged chunks, frames, upload parts)")
	if fs.Lookup("quiet") == nil {
		fs.BoolVarP(&f.Quiet, "quiet", "q", false, "no progress, only errors and the result")
	}
}

// Options turns the flags into Options: log lines on log, a display from newProgress for each
// transfer (neither with --quiet), the password read from stdin.
func (f *Flags) Options(stdin io.Reader, log io.Writer, newProgress func(label string, total int64) Progress) (Options, error) {
	o := Options{Username: f.Username, PlainHTTP: f.PlainHTTP, Digest: f.Digest, Jobs: f.Jobs,
		Private: f.Private, Message: f.Message, Log: log, NewProgress: newProgress}
	if f.PasswordStdin {
		if f.Username == "" {
			return o, errors.New("--password-stdin needs --username")
		}
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && err != io.EOF {
			return o, fmt.Errorf("reading the password from stdin: %w", err)
		}
		o.Password = strings.TrimRight(line, "\r\n")
		if o.Password == "" {
			return o, errors.New("--password-stdin: stdin was empty")
		}
	} else if f.Username != "" {
		return o, errors.New("--username needs --password-stdin (passwords are never taken from the command line)")
	}
	if f.Compress != "" {
		m, err := ParseCompressMode(f.Compress)
		if err != nil {
			return o, err
		}
		o.Compress = m
	}
	if f.Quiet {
		o.Log, o.NewProgress = nil, nil
	}
	return o, nil
}
