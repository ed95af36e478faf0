package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Env is what huggingface_hub reads from the environment, resolved the same
// way (constants.py, utils/_auth.py).
type Env struct {
	Endpoint    string // HF_ENDPOINT, trailing '/' removed; default DefaultEndpoint
	Home        string // HF_HOME; default $XDG_CACHE_HOME/huggingface or ~/.cache/huggingface
	HubCache    string // HF_HUB_CACHE (legacy HUGGINGFACE_HUB_CACHE); default $HF_HOME/hub
	Token       string // HF_TOKEN (legacy HUGGING_FACE_HUB_TOKEN), else the token file
	TokenSource string // "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN" or the token file's path; "" without a token
	Offline     bool   // HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE
	// ProgressBars is nil when HF_HUB_DISABLE_PROGRESS_BARS is unset (the
	// program decides), else whether bars are wanted.
	ProgressBars    *bool
	MetadataTimeout time.Duration // HF_HUB_ETAG_TIMEOUT seconds; 0 when unset
	StallTimeout    time.Duration // HF_HUB_DOWNLOAD_TIMEOUT seconds; 0 when unset
}

// LoadEnv reads the Hugging Face environment variables through lookup
// (os.LookupEnv in a program, a map in tests).
func LoadEnv(lookup func(string) (string, bool)) (Env, error) {
	get := func(names ...string) string {
		for _, n := range names {
			if v, ok := lookup(n); ok && strings.TrimSpace(v) != "" {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	var e Env
	e.Endpoint = strings.TrimRight(get("HF_ENDPOINT"), "/")
	if e.Endpoint == "" {
		e.Endpoint = DefaultEndpoint
	}
	home, err := expandHome(get("HF_HOME"), lookup)
	if err != nil {
		return e, err
	}
	if home == "" {
		if xdg := get("XDG_CACHE_HOME"); xdg != "" {
			home = filepath.Join(xdg, "huggingface")
		} else {
			h, err := userHome(lookup)
			if err != nil {
				return e, fmt.Errorf("hub: cannot find the cache: set HF_HOME or HF_HUB_CACHE (%v)", err)
			}
			home = filepath.Join(h, ".cache", "huggingface")
		}
	}
	e.Home = home
	if e.HubCache, err = expandHome(get("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"), lookup); err != nil {
		return e, err
	}
	if e.HubCache == "" {
		e.HubCache = filepath.Join(home, "hub")
	}
	e.Offline = isTruthy(get("HF_HUB_OFFLINE")) || isTruthy(get("TRANSFORMERS_OFFLINE"))
	if v := get("HF_HUB_DISABLE_PROGRESS_BARS"); v != "" {
		bars := !isTruthy(v)
		e.ProgressBars = &bars
	}
	for _, t := range []struct {
		name string
		dst  *time.Duration
	}{{"HF_HUB_ETAG_TIMEOUT", &e.MetadataTimeout}, {"HF_HUB_DOWNLOAD_TIMEOUT", &e.StallTimeout}} {
		if v := get(t.name); v != "" {
			secs, err := strconv.ParseFloat(v, 64)
			if err != nil || secs <= 0 {
				return e, fmt.Errorf("hub: %s=%q: expected a positive number of seconds", t.name, v)
			}
			*t.dst = time.Duration(secs * float64(time.Second))
		}
	}
	if isTruthy(get("HF_HUB_DISABLE_IMPLICIT_TOKEN")) {
		return e, nil
	}
	for _, n := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if v := get(n); v != "" {
			e.Token, e.TokenSource = v, n
			return e, nil
		}
	}
	tokenPath, err := expandHome(get("HF_TOKEN_PATH"), lookup)
	if err != nil {
		return e, err
	}
	if tokenPath == "" {
		tokenPath = filepath.Join(home, "token")
	}
	data, err := os.ReadFile(tokenPath)
	switch {
	case err == nil:
		if tok := strings.TrimSpace(string(data)); tok != "" {
			e.Token, e.TokenSource = tok, tokenPath
		}
	case !os.IsNotExist(err):
		return e, fmt.Errorf("hub: reading the token file: %v", err)
	}
	return e, nil
}

// Client returns a Client configured from e. Progress and Log are left for
// the program to set.
func (e Env) Client() *Client {
	return &Client{
		Endpoint:        e.Endpoint,
		Token:           e.Token,
		TokenSource:     e.TokenSource,
		CacheDir:        e.HubCache,
		Offline:         e.Offline,
		MetadataTimeout: e.MetadataTimeout,
		StallTimeout:    e.StallTimeout,
	}
}

// NewClientFromEnv returns a Client configured from the process environment.
// It reports nothing: set Progress and Log to show the downloads (the
// command-line tools draw a bar on stderr, plain lines when
// Env.ProgressBars says so). Command-line flags override by setting fields
// afterwards (for a --token flag also set TokenSource = "--token").
func NewClientFromEnv() (*Client, error) {
	e, err := LoadEnv(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	return e.Client(), nil
}

// isTruthy is huggingface_hub's _is_true: 1, ON, YES, TRUE in any case.
func isTruthy(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

func userHome(lookup func(string) (string, bool)) (string, error) {
	if h, ok := lookup("HOME"); ok && h != "" {
		return h, nil
	}
	return os.UserHomeDir()
}

// expandHome expands a leading "~/" the way Python's os.path.expanduser does.
func expandHome(p string, lookup func(string) (string, bool)) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	h, err := userHome(lookup)
	if err != nil {
		return "", fmt.Errorf("hub: cannot expand %q: %v", p, err)
	}
	return filepath.Join(h, strings.TrimPrefix(p, "~")), nil
}
