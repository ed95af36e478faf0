package hubtest

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// event is a Drop, Stall or Trickle at a file offset within one response.
type event struct {
	at      int64
	drop    bool
	stall   time.Duration
	trickle time.Duration // one byte per trickle from at to the end
}

// plan is what faults one content response gets.
type plan struct {
	ignoreRange bool
	events      []event // sorted by offset
	corrupt     []int64
}

// planFaults decides whether a Range request is answered with the whole
// file (an IgnoreRange fault).
func (s *Server) planFaults(file string, ranged bool) plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	var p plan
	for i := range s.faults.IgnoreRange {
		f := &s.faults.IgnoreRange[i]
		if ranged && fileMatch(f.File, file) && s.take(f, f.Times) {
			p.ignoreRange = true
			break
		}
	}
	return p
}

// planBytes adds the byte-position faults for [start, end). A fault is
// counted only when its byte is inside the response.
func (s *Server) planBytes(p *plan, file string, start, end int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := func(at int64) bool { return at >= start && at < end }
	for i := range s.faults.Drop {
		f := &s.faults.Drop[i]
		if fileMatch(f.File, file) && in(f.At) && s.take(f, f.Times) {
			p.events = append(p.events, event{at: f.At, drop: true})
		}
	}
	for i := range s.faults.Stall {
		f := &s.faults.Stall[i]
		if fileMatch(f.File, file) && in(f.At) && s.take(f, f.Times) {
			p.events = append(p.events, event{at: f.At, stall: f.For})
		}
	}
	for i := range s.faults.Trickle {
		f := &s.faults.Trickle[i]
		// Unlike the other faults, a trickle also hits a response that starts past At
		// (a resumed request): the server is slow, not one byte of the file.
		if fileMatch(f.File, file) && f.At < end && s.take(f, f.Times) {
			p.events = append(p.events, event{at: max(f.At, start), trickle: f.Every})
		}
	}
	for i := range s.faults.Corrupt {
		f := &s.faults.Corrupt[i]
		if fileMatch(f.File, file) && in(f.At) && s.take(f, f.Times) {
			p.corrupt = append(p.corrupt, f.At)
		}
	}
	sort.Slice(p.events, func(i, j int) bool { return p.events[i].at < p.events[j].at })
}

// parseRange reads a single "bytes=a-b", "bytes=a-" or "bytes=-n" range.
// ok is false for a syntax the server ignores (it then sends the whole
// file); satisfiable is false when the range lies outside the file.
func parseRange(h string, size int64) (start, end int64, ok, satisfiable bool) {
	spec, found := strings.CutPrefix(h, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false, false
	}
	a, b, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false, false
	}
	if a == "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return 0, 0, false, false
		}
		return max(size-n, 0), size, true, size > 0
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false, false
	}
	end = size
	if b != "" {
		last, err := strconv.ParseInt(b, 10, 64)
		if err != nil || last < start {
			return 0, 0, false, false
		}
		end = min(last+1, size)
	}
	return start, end, true, start < size
}

// serveContent sends a blob (or the requested range of it) with the faults
// that apply.
func (s *Server) serveContent(w http.ResponseWriter, r *http.Request, b *blob, file, etag string) {
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Type", "application/octet-stream")
	rangeHdr := r.Header.Get("Range")
	p := s.planFaults(file, rangeHdr != "")
	start, end, status := int64(0), b.Size, http.StatusOK
	if rangeHdr != "" && !p.ignoreRange {
		ifRange := r.Header.Get("If-Range")
		rs, re, ok, satisfiable := parseRange(rangeHdr, b.Size)
		switch {
		case ifRange != "" && ifRange != etag:
			// Stale validator: the whole (new) file.
		case ok && !satisfiable:
			h.Set("Content-Range", fmt.Sprintf("bytes */%d", b.Size))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		case ok:
			start, end, status = rs, re, http.StatusPartialContent
			h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, b.Size))
		}
	}
	h.Set("Content-Length", strconv.FormatInt(end-start, 10))
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	s.planBytes(&p, file, start, end)
	src, closeSrc, err := b.open()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	defer closeSrc()
	if len(p.events) == 0 && len(p.corrupt) == 0 {
		if f, ok := src.(*os.File); ok {
			// sendfile(2), through the response's ReadFrom.
			f.Seek(start, io.SeekStart)
			io.CopyN(w, f, end-start)
			return
		}
		io.Copy(w, io.NewSectionReader(src, start, end-start))
		return
	}
	s.sendWithFaults(w, r, src, start, end, p)
}

// sendWithFaults writes [start, end) piece by piece, corrupting, stalling
// and dropping where planned.
func (s *Server) sendWithFaults(w http.ResponseWriter, r *http.Request, src io.ReaderAt, start, end int64, p plan) {
	buf := make([]byte, 256<<10)
	pos := start
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	events := p.events
	for pos < end {
		stop := end
		if len(events) > 0 {
			stop = events[0].at
		}
		for pos < stop {
			n := min(int64(len(buf)), stop-pos)
			if _, err := src.ReadAt(buf[:n], pos); err != nil && err != io.EOF {
				panic(http.ErrAbortHandler)
			}
			for _, at := range p.corrupt {
				if at >= pos && at < pos+n {
					buf[at-pos] ^= 0xFF
				}
			}
			if _, err := w.Write(buf[:n]); err != nil {
				return
			}
			pos += n
		}
		if len(events) == 0 {
			break
		}
		ev := events[0]
		events = events[1:]
		flush()
		if ev.drop {
			// Abort the connection mid-body: the client sees an
			// unexpected EOF before Content-Length is reached.
			panic(http.ErrAbortHandler)
		}
		if ev.trickle > 0 {
			s.trickle(w, r, src, pos, end, ev.trickle, flush)
			return
		}
		t := time.NewTimer(ev.stall)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
}

// trickle sends [pos, end) one byte every d, flushing each, until the end or the client goes.
func (s *Server) trickle(w http.ResponseWriter, r *http.Request, src io.ReaderAt, pos, end int64, d time.Duration, flush func()) {
	var b [1]byte
	tick := time.NewTicker(d)
	defer tick.Stop()
	for ; pos < end; pos++ {
		select {
		case <-tick.C:
		case <-r.Context().Done():
			return
		}
		if _, err := src.ReadAt(b[:], pos); err != nil && err != io.EOF {
			panic(http.ErrAbortHandler)
		}
		if _, err := w.Write(b[:]); err != nil {
			return
		}
		flush()
	}
}
