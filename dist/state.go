package dist

import (
	"bytes"
	"encoding/json"
	"os"
	"time"
)

// partState is what a transfer records beside its part file so that a later run (in this
// process or another) resumes: how much of each unit is on disk.
type partState struct {
	Version int     `json:"version"`
	ID      string  `json:"id"`   // the source and layout the part belongs to
	Size    int64   `json:"size"` // output size
	Done    []int64 `json:"done"` // per unit, output bytes on disk
}

const stateVersion = 1

// The state file is written in place, padded with spaces to a fixed size reserved when the
// transfer starts: saving progress never needs new disk space, so the state that makes a
// resume possible can still be written when the disk has just filled up. A torn write only
// costs the resume (the JSON no longer parses and the transfer starts over).

// loadState restores the units' progress from an earlier run of the same transfer and
// returns the bytes already present; 0 when there is nothing usable.
func (t *transfer) loadState() int64 {
	data, err := os.ReadFile(t.part.StatePath)
	if err != nil {
		return 0
	}
	var st partState
	if json.Unmarshal(data, &st) != nil || st.Version != stateVersion || st.ID != t.id || st.Size != t.size || len(st.Done) != len(t.units) {
		return 0
	}
	fi, err := t.f.Stat()
	if err != nil || fi.Size() != t.size {
		return 0
	}
	var total int64
	for i, u := range t.units {
		d := st.Done[i]
		if d < 0 || d > u.n || (u.frame && d != 0 && d != u.n) {
			for _, u := range t.units {
				u.done.Store(0)
			}
			return 0
		}
		u.done.Store(d)
		total += d
	}
	return total
}

func (t *transfer) snapshot() partState {
	st := partState{Version: stateVersion, ID: t.id, Size: t.size, Done: make([]int64, len(t.units))}
	for i, u := range t.units {
		st.Done[i] = u.done.Load()
	}
	return st
}

// openState opens the state file and reserves its space (the largest state this transfer can
// write). Failing that (no space even now), progress is simply not recorded.
func (t *transfer) openState() {
	big := t.snapshot()
	for i := range big.Done {
		big.Done[i] = 1 << 62
	}
	data, err := json.Marshal(big)
	if err != nil {
		return
	}
	t.stateCap = (len(data) + 1 + 4095) &^ 4095
	f, err := os.OpenFile(t.part.StatePath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	t.stateFile = f
	t.saveState()
}

func (t *transfer) closeState() {
	if t.stateFile != nil {
		t.stateFile.Close()
		t.stateFile = nil
	}
}

// saveState records the progress. Errors are ignored: the worst case is a resume from less.
// The part file is not synced first (an fsync a second stalls the writers on slow disks):
// after a process is killed the page cache still holds every byte the state claims, and
// after a machine crash that lost some, the digest check at the end fails and the pull
// downloads again from the start.
func (t *transfer) saveState() {
	if t.stateFile == nil {
		return
	}
	st := t.snapshot()
	data, err := json.Marshal(st)
	if err != nil || len(data) > t.stateCap {
		return
	}
	data = append(data, bytes.Repeat([]byte{' '}, t.stateCap-len(data))...)
	t.stateFile.WriteAt(data, 0)
}

// saver records the progress every stateInterval until stop is closed.
func (t *transfer) saver(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(stateInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			t.saveState()
		case <-stop:
			return
		}
	}
}
