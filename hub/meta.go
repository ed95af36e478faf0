package hub

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// fileMeta is what the HEAD on /resolve/ tells about a file.
type fileMeta struct {
	commit string // X-Repo-Commit
	etag   string // X-Linked-Etag or ETag, normalised
	size   int64  // X-Linked-Size, or Content-Length of a non-redirect; -1 if unknown
	// location is where to GET the bytes: the CDN's signed URL from an
	// absolute redirect, or the Hub URL itself for small files.
	location *url.URL
}

// headFile does huggingface_hub's get_hf_file_metadata: HEAD without
// automatic redirects, relative redirects followed by hand, headers read from
// the last Hub response (the 302 to the CDN for LFS files).
func (c *Client) headFile(ctx context.Context, repo, commit, file string) (*fileMeta, error) {
	what := reqDesc{repo: repo, rev: commit, file: file, kind: "metadata of"}
	resp, final, err := c.hubDo(ctx, http.MethodHead, c.resolveURL(repo, commit, file), what)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		return nil, c.httpError(resp, what)
	}
	resp.Body.Close()
	m := &fileMeta{commit: resp.Header.Get("X-Repo-Commit"), size: -1, location: final}
	if m.commit == "" {
		return nil, &Error{Kind: ErrProtocol, Repo: repo, File: file, Status: resp.StatusCode,
			Msg: fmt.Sprintf("%s: the answer has no X-Repo-Commit header; a proxy or firewall between here and %s may be rewriting responses", what, c.Endpoint)}
	}
	etag := resp.Header.Get("X-Linked-Etag")
	if etag == "" {
		etag = resp.Header.Get("ETag")
	}
	m.etag = normalizeEtag(etag)
	redirect := isRedirect(resp.StatusCode)
	if s := resp.Header.Get("X-Linked-Size"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
			m.size = n
		}
	} else if !redirect && resp.ContentLength >= 0 {
		// A redirect's Content-Length is the size of its own little body
		// (huggingface_hub PR #4699), never the file's.
		m.size = resp.ContentLength
	}
	if redirect {
		loc, err := final.Parse(resp.Header.Get("Location"))
		if err != nil || resp.Header.Get("Location") == "" {
			return nil, &Error{Kind: ErrProtocol, Repo: repo, File: file, Status: resp.StatusCode,
				Msg: fmt.Sprintf("%s: redirect without a usable Location", what)}
		}
		m.location = loc
	}
	return m, nil
}

// normalizeEtag strips the weak prefix and quotes: W/"abc" -> abc.
func normalizeEtag(e string) string {
	e = strings.TrimSpace(e)
	e = strings.TrimPrefix(e, "W/")
	return strings.ToLower(strings.Trim(e, `"`))
}
