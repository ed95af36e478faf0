package hub

import (
	"encoding/json"
	"os"

	"github.com/anepack/anepack/internal/cli"
)

// The .part file of a download and its chunk state. A single-stream
// download's progress is simply the .part file's length; a parallel one
// preallocates the file and records each chunk's progress beside it, in
// <blob>.part.json.

// partState is <blob>.part.json: the chunk layout and progress of a
// parallel download, so that a later process resumes each chunk.
type partState struct {
	Version int        `json:"version"`
	Size    int64      `json:"size"`
	Chunks  [][3]int64 `json:"chunks"` // start, end, done
}

// plan sets up the chunks from the .part file and its state, so that
// whatever an earlier run (or process) wrote is kept.
func (t *transfer) plan() error {
	st, err := t.f.Stat()
	if err != nil {
		return err
	}
	have := st.Size()
	if chunks, ok := t.loadState(have); ok {
		t.chunks, t.multi = chunks, true
	} else {
		os.Remove(t.statePath)
		if have > t.size {
			if err := t.f.Truncate(0); err != nil {
				return diskErr(err, t.part)
			}
			have = 0
		}
		// A .part without state is a contiguous prefix: have bytes.
		if cs := t.c.ChunkSize; cs > 0 && t.size > cs && !t.noRanges {
			t.multi = true
			t.chunks = nil
			for start := int64(0); start < t.size; start += cs {
				ch := &chunk{start: start, end: min(start+cs, t.size)}
				ch.done.Store(min(max(have-start, 0), ch.end-ch.start))
				t.chunks = append(t.chunks, ch)
			}
			// The state goes first: a full-size sparse file without it
			// would look complete.
			if err := t.saveState(); err != nil {
				return err
			}
			if err := t.f.Truncate(t.size); err != nil {
				return diskErr(err, t.part)
			}
		} else {
			ch := &chunk{start: 0, end: t.size}
			ch.done.Store(have)
			t.chunks, t.multi = []*chunk{ch}, false
		}
	}
	if done := t.doneBytes(); done > 0 {
		t.c.logf("%s: resuming from %s already downloaded", t.what.file, cli.FormatBytesSI(done))
		t.prog.add(done)
	}
	return nil
}

// loadState reads <blob>.part.json if it matches this file.
func (t *transfer) loadState(have int64) ([]*chunk, bool) {
	data, err := os.ReadFile(t.statePath)
	if err != nil {
		return nil, false
	}
	var st partState
	if json.Unmarshal(data, &st) != nil || st.Version != 1 || st.Size != t.size || have != t.size || t.noRanges {
		return nil, false
	}
	var chunks []*chunk
	next := int64(0)
	for _, c := range st.Chunks {
		start, end, done := c[0], c[1], c[2]
		if start != next || end <= start || end > t.size || done < 0 || done > end-start {
			return nil, false
		}
		ch := &chunk{start: start, end: end}
		ch.done.Store(done)
		chunks = append(chunks, ch)
		next = end
	}
	return chunks, next == t.size && len(chunks) > 0
}

// saveState writes the chunk progress (temp file + rename). Data is always
// written before the progress that covers it, so the state never claims
// bytes that are not in the file.
func (t *transfer) saveState() error {
	t.saveMu.Lock()
	defer t.saveMu.Unlock()
	st := partState{Version: 1, Size: t.size}
	for _, ch := range t.chunks {
		st.Chunks = append(st.Chunks, [3]int64{ch.start, ch.end, ch.done.Load()})
	}
	data, _ := json.Marshal(st)
	tmp := t.statePath + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return diskErr(err, t.statePath)
	}
	return diskErr(os.Rename(tmp, t.statePath), t.statePath)
}

// reset empties the .part file for a download from byte 0 in one stream.
func (t *transfer) reset() error {
	t.prog.add(-t.doneBytes())
	os.Remove(t.statePath)
	if err := t.f.Truncate(0); err != nil {
		return diskErr(err, t.part)
	}
	t.multi = false
	t.chunks = []*chunk{{start: 0, end: t.size}}
	return nil
}
