package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/anepack/anepack/internal/stall"
	"github.com/anepack/anepack/internal/transfer"
)

// maxRedirects bounds the relative redirects followed on the Hub.
const maxRedirects = 10

// newRequest builds a request; the token is attached only when auth is set,
// which callers do only for URLs on the Hub endpoint's host.
func (c *Client) newRequest(ctx context.Context, method string, u *url.URL, auth bool) *http.Request {
	req := (&http.Request{
		Method: method,
		URL:    u,
		Header: make(http.Header),
		Host:   u.Host,
	}).WithContext(ctx)
	req.Header.Set("User-Agent", c.UserAgent)
	// Sizes and hashes are of the raw bytes; gzip would change Content-Length.
	req.Header.Set("Accept-Encoding", "identity")
	if auth && c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return req
}

// onEndpoint reports whether u is on the Hub endpoint's origin, the only place
// the token may be sent.
func (c *Client) onEndpoint(u *url.URL) bool { return SameOrigin(u, c.endpoint) }

// SameOrigin reports whether a and b have the same scheme, host and port,
// compared as URLs compare them: without regard to case. It is the rule for
// where a Hub token may go (remote's uploads use it too).
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// send performs one request under a stall meter with window d and the client's MinRate: the
// headers must come within d, then every window of d must bring MinRate bytes a second. The
// response body is watched as well; closing it releases the request's resources.
func (c *Client) send(req *http.Request, d time.Duration) (*http.Response, error) {
	parent := req.Context()
	ctx, cancel := context.WithCancel(parent)
	m := stall.Start(stall.Policy{Window: d, MinRate: c.MinRate}, cancel)
	resp, err := c.hc.Do(req.WithContext(ctx))
	if err != nil {
		m.Stop()
		cancel()
		if m.Fired() && parent.Err() == nil {
			return nil, fmt.Errorf("%w: %s", stall.ErrStalled, m.Reason())
		}
		return nil, err
	}
	m.Restart() // the body gets whole windows of its own
	resp.Body = stall.Body(resp.Body, m, cancel, parent)
	return resp, nil
}

// drain reads a little of an unwanted body so the connection can be reused,
// then closes it.
func drain(resp *http.Response) {
	io.CopyN(io.Discard, resp.Body, 64<<10)
	resp.Body.Close()
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// hubDo sends a request to the Hub, following only relative redirects (no
// host in Location), as huggingface_hub does: those are Hub-internal (renamed
// repos, the resolve-cache hop, mirrors). A redirect to another host (the
// CDN) ends the loop and is returned as is, with its headers. Transient
// failures are retried per c.Backoff. The returned URL is the one that
// produced the response.
func (c *Client) hubDo(ctx context.Context, method, rawURL string, what reqDesc) (*http.Response, *url.URL, error) {
	start, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, fmt.Errorf("hub: bad URL %q: %w", rawURL, err)
	}
	var lastErr error
	for attempt := 0; ; attempt++ {
		resp, final, err := c.followRelative(ctx, method, start, what)
		if err == nil && !transfer.RetryableStatus(resp.StatusCode) {
			return resp, final, nil
		}
		if ctx.Err() != nil {
			if resp != nil {
				resp.Body.Close()
			}
			return nil, nil, ctx.Err()
		}
		var wait time.Duration
		if err != nil {
			var he *Error
			if errors.As(err, &he) || !retryableErr(ctx, err) {
				return nil, nil, err
			}
			lastErr = &Error{Kind: ErrNetwork, Repo: what.repo, Revision: what.rev, File: what.file,
				Msg: fmt.Sprintf("cannot reach %s (%s)", c.Endpoint, what), Err: err}
			wait = c.Backoff.delay(attempt)
		} else {
			lastErr = c.httpError(resp, what)
			if sw, ok := serverWait(resp.Header, time.Now()); ok {
				wait = sw
				if wait > c.Backoff.MaxWait {
					return nil, nil, &Error{Kind: ErrRateLimited, Repo: what.repo, File: what.file, Status: resp.StatusCode,
						Msg: fmt.Sprintf("%s asks to wait %v before retrying (%s); try again later", c.Endpoint, wait.Round(time.Second), what)}
				}
			} else {
				wait = c.Backoff.delay(attempt)
			}
		}
		if attempt >= c.Backoff.Retries {
			return nil, nil, lastErr
		}
		c.logf("%v; retrying in %v (attempt %d of %d)", lastErr, wait, attempt+2, c.Backoff.Retries+1)
		if err := c.sleep(ctx, wait); err != nil {
			return nil, nil, err
		}
	}
}

// followRelative does one request plus its relative redirects.
func (c *Client) followRelative(ctx context.Context, method string, u *url.URL, what reqDesc) (*http.Response, *url.URL, error) {
	for hop := 0; ; hop++ {
		resp, err := c.send(c.newRequest(ctx, method, u, c.onEndpoint(u)), c.MetadataTimeout)
		if err != nil {
			return nil, nil, err
		}
		if !isRedirect(resp.StatusCode) {
			return resp, u, nil
		}
		loc := resp.Header.Get("Location")
		next, perr := url.Parse(loc)
		if loc == "" || perr != nil || next.Host != "" || next.Scheme != "" {
			// Absolute (the CDN) or unusable: the caller reads this response.
			return resp, u, nil
		}
		drain(resp)
		if hop >= maxRedirects {
			return nil, nil, &Error{Kind: ErrProtocol, Repo: what.repo, File: what.file, Status: resp.StatusCode,
				Msg: fmt.Sprintf("%s: more than %d redirects (a redirect loop on the server or a proxy)", what, maxRedirects)}
		}
		u = u.ResolveReference(next)
	}
}

// reqDesc names what a request is about, for messages.
type reqDesc struct {
	repo, rev, file string
	kind            string // "model info", "file list", "metadata of", "download of"
}

func (d reqDesc) String() string {
	s := d.kind + " " + d.repo
	if d.file != "" {
		s = d.kind + " " + d.file + " in " + d.repo
	}
	if d.rev != "" {
		s += " at " + d.rev
	}
	return s
}

// httpError turns a failed Hub response into an Error a user can act on,
// from X-Error-Code / X-Error-Message and the JSON body, as
// huggingface_hub's hf_raise_for_status does. It closes the body.
func (c *Client) httpError(resp *http.Response, what reqDesc) *Error {
	defer resp.Body.Close()
	code := resp.Header.Get("X-Error-Code")
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := serverMessage(resp.Header, body)
	e := &Error{Repo: what.repo, Revision: what.rev, File: what.file, Status: resp.StatusCode,
		RequestID: resp.Header.Get("X-Request-Id")}
	page := c.repoURL(what.repo)
	tokenHint := "set HF_TOKEN (or pass --token) to a token from " + c.Endpoint + "/settings/tokens"
	st := resp.StatusCode
	switch {
	case code == "GatedRepo" && st == http.StatusUnauthorized:
		e.Kind = ErrGated
		e.Msg = fmt.Sprintf("%s is a gated model: accept its license on the model page %s, then %s", what.repo, page, tokenHint)
	case code == "GatedRepo":
		e.Kind = ErrGated
		e.Msg = fmt.Sprintf("%s is a gated model and the token%s has no access yet: accept the license on the model page %s with that account (some models also need the authors' approval), or use another token", what.repo, c.fromSource(), page)
	case strings.Contains(msg, "Invalid credentials in Authorization header") || strings.Contains(msg, "Invalid username or password"):
		e.Kind = ErrUnauthorized
		e.Msg = fmt.Sprintf("%s rejected the token%s as invalid: check it, or %s", c.Endpoint, c.fromSource(), tokenHint)
	case code == "RepoNotFound" || (st == http.StatusUnauthorized && what.file == ""):
		e.Kind = ErrRepoNotFound
		if c.Token == "" {
			e.Msg = fmt.Sprintf("repository %s not found on %s: check the name; if it is private, %s", what.repo, c.Endpoint, tokenHint)
		} else {
			e.Msg = fmt.Sprintf("repository %s not found on %s: check the name; if it is private, the token%s cannot read it", what.repo, c.Endpoint, c.fromSource())
		}
	case code == "RevisionNotFound":
		e.Kind = ErrRevisionNotFound
		e.Msg = fmt.Sprintf("revision %q not found in %s: use a branch, tag or commit hash that exists (see %s/tree/main)", what.rev, what.repo, page)
	case code == "EntryNotFound" || (st == http.StatusNotFound && what.file != ""):
		e.Kind = ErrEntryNotFound
		e.Msg = fmt.Sprintf("file %s not found in %s at revision %s", what.file, what.repo, what.rev)
	case strings.Contains(msg, "Access to this resource is disabled"):
		e.Kind = ErrForbidden
		e.Msg = fmt.Sprintf("%s has been disabled on %s", what.repo, c.Endpoint)
	case st == http.StatusUnauthorized:
		e.Kind = ErrUnauthorized
		e.Msg = fmt.Sprintf("%s: authentication required (HTTP 401); %s", what, tokenHint)
	case st == http.StatusForbidden:
		e.Kind = ErrForbidden
		e.Msg = fmt.Sprintf("%s: forbidden (HTTP 403): the token%s lacks a permission (a fine-grained token needs read access to this repo)", what, c.fromSource())
	case st == http.StatusNotFound:
		e.Kind = ErrRepoNotFound
		e.Msg = fmt.Sprintf("%s: not found (HTTP 404)", what)
	case st == http.StatusRequestTimeout:
		e.Kind = ErrNetwork
		e.Msg = fmt.Sprintf("%s: the server timed out waiting for the request (HTTP 408); check the network and try again", what)
	case st == http.StatusTooManyRequests:
		e.Kind = ErrRateLimited
		e.Msg = fmt.Sprintf("%s: rate limited by %s (HTTP 429); wait a while or use a token (HF_TOKEN), which raises the limit", what, c.Endpoint)
	case st >= 500:
		e.Kind = ErrServer
		e.Msg = fmt.Sprintf("%s: server error (HTTP %d); try again later", what, st)
	default:
		e.Kind = ErrProtocol
		e.Msg = fmt.Sprintf("%s: unexpected HTTP %d", what, st)
	}
	if msg != "" && !strings.Contains(e.Msg, msg) {
		e.Msg += " (server says: " + truncate(msg, 200) + ")"
	}
	return e
}

func (c *Client) fromSource() string {
	if c.TokenSource == "" {
		return ""
	}
	return " from " + c.TokenSource
}

// serverMessage is what the Hub says about a failed request: the X-Error-Message header, else
// its JSON error body ("error" as a string or a list, "message", "error_description"). The
// download and upload sides both read errors this way.
func serverMessage(h http.Header, body []byte) string {
	if m := h.Get("X-Error-Message"); m != "" {
		return m
	}
	var v struct {
		Error       json.RawMessage `json:"error"`
		Message     string          `json:"message"`
		Description string          `json:"error_description"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	var s string
	var list []string
	switch {
	case json.Unmarshal(v.Error, &s) == nil:
	case json.Unmarshal(v.Error, &list) == nil:
		s = strings.Join(list, "; ")
	}
	for _, more := range []string{v.Message, v.Description} {
		if more != "" {
			s = strings.TrimSpace(s + " " + more)
		}
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
