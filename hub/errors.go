package hub

import (
	"errors"
	"fmt"
	"strings"
)

// Error kinds. Every error the client returns for one of these situations
// matches the kind with errors.Is, and its message says what to do.
var (
	// ErrGated: the repo is gated and the token (or its absence) does not grant access.
	ErrGated = errors.New("gated repository")
	// ErrRepoNotFound: the repo does not exist, or it is private and the token cannot read it.
	ErrRepoNotFound = errors.New("repository not found")
	// ErrRevisionNotFound: the branch, tag or commit does not exist in the repo.
	ErrRevisionNotFound = errors.New("revision not found")
	// ErrEntryNotFound: the file does not exist at that revision.
	ErrEntryNotFound = errors.New("file not found")
	// ErrUnauthorized: the server rejected the token itself.
	ErrUnauthorized = errors.New("invalid token")
	// ErrForbidden: the token is valid but lacks a permission, or the repo is disabled.
	ErrForbidden = errors.New("forbidden")
	// ErrRateLimited: the server kept answering 429, or asked for a longer wait than Backoff.MaxWait.
	ErrRateLimited = errors.New("rate limited")
	// ErrServer: the server kept failing (5xx) after all retries.
	ErrServer = errors.New("server error")
	// ErrChecksum: a file's content did not match its sha256 / git blob id or size after all retries.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrDiskFull: the cache file system has no space left.
	ErrDiskFull = errors.New("no space left on device")
	// ErrNotCached: offline mode, and the revision or a file is not in the cache.
	ErrNotCached = errors.New("not in the cache")
	// ErrUnsafePath: a server listing contained a file name that would escape the snapshot folder.
	ErrUnsafePath = errors.New("unsafe file name")
	// ErrProtocol: the server's answer does not follow the Hub protocol (missing headers, redirect loops, bad JSON).
	ErrProtocol = errors.New("protocol error")
	// ErrNetwork: the server could not be reached or the connection kept failing.
	ErrNetwork = errors.New("network error")
)

// Error is the error type the client returns. Kind is one of the Err*
// variables above; Msg is the complete, user-facing message.
type Error struct {
	Kind      error
	Repo      string
	Revision  string
	File      string
	Status    int    // HTTP status, when there was one
	RequestID string // X-Request-Id, useful in a report to Hugging Face
	Msg       string
	Err       error // the underlying cause, if any
}

// Error returns the message, followed by the cause when there is one.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Msg)
	if e.Err != nil && !strings.Contains(e.Msg, e.Err.Error()) {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request id %s)", e.RequestID)
	}
	return b.String()
}

// Unwrap exposes both the kind and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// redactedError replaces the token in a message while keeping the error chain.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact makes sure the token never appears in an error that leaves the
// package, whatever produced the text (net/http, the OS, the server's body).
func redact(err error, token string) error {
	if err == nil || token == "" {
		return err
	}
	msg := err.Error()
	if !strings.Contains(msg, token) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(msg, token, "hf_***"), err: err}
}
