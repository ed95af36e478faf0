package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/anepack/anepack/internal/regfile"
	"github.com/anepack/anepack/internal/transfer"
)

// The LFS half of an upload: the batch API says whether and where to send the object, and the
// bytes go to presigned storage URLs in one PUT (basic) or in parts (multipart).

const lfsType = "application/vnd.git-lfs+json"

type lfsAction struct {
	Href   string            `json:"href"`
	Header map[string]string `json:"header"`
}

// lfsUpload sends the file to LFS storage unless it is there already, and returns the bytes
// sent.
func (u *uploader) lfsUpload(ctx context.Context, up upload) (int64, error) {
	file, oid := up.file, up.oid
	body, _ := json.Marshal(map[string]any{
		"operation": "upload", "transfers": []string{"basic", "multipart"}, "hash_algo": "sha256",
		"objects": []map[string]any{{"oid": oid, "size": up.size}},
		"ref":     map[string]string{"name": "refs/heads/" + up.revision},
	})
	var batch struct {
		Objects []struct {
			OID     string               `json:"oid"`
			Actions map[string]lfsAction `json:"actions"`
			Error   *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"objects"`
	}
	if _, err := u.call(ctx, "LFS batch for "+file, http.MethodPost, u.c.Endpoint+"/"+up.repo+".git/info/lfs/objects/batch", lfsType, body, &batch); err != nil {
		return 0, err
	}
	if len(batch.Objects) != 1 || batch.Objects[0].OID != oid {
		return 0, fmt.Errorf("LFS batch for %s: the answer does not describe object %s", file, oid)
	}
	obj := batch.Objects[0]
	if obj.Error != nil {
		return 0, fmt.Errorf("LFS batch for %s: %d %s", file, obj.Error.Code, obj.Error.Message)
	}
	upload, ok := obj.Actions["upload"]
	if !ok {
		u.logf("%s: %s is already on the Hub; not uploading it", u.opts.Label, file)
		return 0, nil
	}
	var err error
	if cs, ok := upload.Header["chunk_size"]; ok {
		err = u.multipart(ctx, up, upload, cs)
	} else {
		err = u.putFile(ctx, upload.Href, upload.Header, up.path, 0, up.size, "uploading "+file)
	}
	if err != nil {
		return 0, err
	}
	if verify, ok := obj.Actions["verify"]; ok {
		vb, _ := json.Marshal(map[string]any{"oid": oid, "size": up.size})
		if _, err := u.call(ctx, "LFS verify of "+file, http.MethodPost, verify.Href, lfsType, vb, nil); err != nil {
			return 0, err
		}
	}
	return up.size, nil
}

// putFileETag PUTs bytes [off, off+n) of path to a (presigned) URL and returns the ETag,
// retrying transient failures from the start of the slice.
func (u *uploader) putFileETag(ctx context.Context, href string, header map[string]string, path string, off, n int64, prog func(int64)) (string, error) {
	for attempt := 0; ; attempt++ {
		f, err := regfile.Open(path)
		if err != nil {
			return "", err
		}
		var sent int64
		body := io.NopCloser(&progressReader{r: io.NewSectionReader(f, off, n), add: func(k int64) { sent += k; prog(k) }})
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, href, body)
		if err != nil {
			f.Close()
			return "", err
		}
		req.ContentLength = n
		for k, v := range header {
			if k != "chunk_size" && !isPartKey(k) {
				req.Header.Set(k, v)
			}
		}
		if u.c.onEndpoint(req.URL) {
			req.Header.Set("Authorization", "Bearer "+u.c.Token)
		}
		resp, err := u.hc.Do(req)
		f.Close()
		retry := err != nil && retryableErr(ctx, err)
		if err == nil {
			data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return resp.Header.Get("ETag"), nil
			}
			err = fmt.Errorf("upload: HTTP %s: %s", resp.Status, uploadMessage(resp.Header, data))
			retry = transfer.RetryableStatus(resp.StatusCode)
		}
		prog(-sent)
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if attempt >= u.opts.Retries || !retry {
			return "", redact(err, u.c.Token)
		}
		u.logf("upload of bytes %d-%d: %v; retrying in %v", off, off+n, redact(err, u.c.Token), u.delay(attempt))
		if err := u.wait(ctx, attempt); err != nil {
			return "", err
		}
	}
}

func (u *uploader) putFile(ctx context.Context, href string, header map[string]string, path string, off, n int64, label string) error {
	prog := u.progress(label, n)
	defer prog.Finish()
	var done int64
	_, err := u.putFileETag(ctx, href, header, path, off, n, func(k int64) { done += k; prog.Set(done, n) })
	return err
}

func isPartKey(k string) bool {
	_, err := strconv.Atoi(k)
	return err == nil
}

// multipart uploads the parts in parallel (the URLs are presigned, so order does not
// matter) and completes the upload with their ETags.
func (u *uploader) multipart(ctx context.Context, up upload, upload lfsAction, chunkSize string) error {
	file, oid := up.file, up.oid
	cs, err := strconv.ParseInt(chunkSize, 10, 64)
	if err != nil || cs <= 0 {
		return fmt.Errorf("LFS batch for %s: invalid chunk_size %q", file, chunkSize)
	}
	var nums []int
	for k := range upload.Header {
		if n, err := strconv.Atoi(k); err == nil {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	want := int((up.size + cs - 1) / cs)
	if len(nums) != want || (want > 0 && (nums[0] != 1 || nums[len(nums)-1] != want)) {
		return fmt.Errorf("LFS batch for %s: %d part URLs for %d parts of %d bytes", file, len(nums), want, cs)
	}
	prog := u.progress("uploading "+file, up.size)
	defer prog.Finish()
	var done atomic.Int64
	etags := make([]string, want)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int, want)
	for i := range want {
		next <- i
	}
	close(next)
	for range min(max(u.opts.Jobs, 1), want) {
		wg.Go(func() {
			for i := range next {
				off := int64(i) * cs
				n := min(cs, up.size-off)
				et, err := u.putFileETag(ctx, upload.Header[strconv.Itoa(i+1)], nil, up.path, off, n, func(k int64) { prog.Set(done.Add(k), up.size) })
				if err == nil && et == "" {
					err = fmt.Errorf("upload of part %d of %s: no ETag in the answer", i+1, file)
				}
				if err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
				etags[i] = et
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	type part struct {
		PartNumber int    `json:"partNumber"`
		ETag       string `json:"etag"`
	}
	parts := make([]part, want)
	for i, et := range etags {
		parts[i] = part{PartNumber: i + 1, ETag: et}
	}
	body, _ := json.Marshal(map[string]any{"oid": oid, "parts": parts})
	_, err = u.call(ctx, "completing the upload of "+file, http.MethodPost, upload.Href, lfsType, body, nil)
	return err
}

type progressReader struct {
	r   io.Reader
	add func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.add(int64(n))
	}
	return n, err
}
