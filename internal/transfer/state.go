package transfer

import (
	"bytes"
	"encoding/json"
	"os"
	"time"
)

// State is what a transfer of several units records beside its part file (StatePath) so that
// a later run, in this process or another, resumes: the layout and how much of each unit is on
// disk.
type State struct {
	Version int    `json:"version"`
	ID      string `json:"id"`   // the source and layout the part belongs to
	Size    int64  `json:"size"` // output size
	// Units are [output offset, output length, bytes done] in order.
	Units [][3]int64 `json:"units"`
}

const stateVersion = 2

// ReadState reads a state file (for tests and tools that show a download's progress).
func ReadState(path string) (State, error) {
	var st State
	data, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(data, &st)
	return st, err
}

// load sets the units' progress from what is on disk and prepares the part file. A file of
// several units is preallocated. It returns the bytes present.
func (t *Transfer) load() (int64, error) {
	for _, u := range t.Units {
		u.done.Store(0)
	}
	t.state = nil
	fi, err := t.f.Stat()
	if err != nil {
		return 0, t.diskErr(err)
	}
	have := fi.Size()
	// A file of one plain unit is written contiguously, so its length is its progress (more
	// exact than a state saved up to a second ago); others need their state.
	kept := t.prefix(have)
	if t.multi() {
		kept = t.restore(have) || t.prefix(have)
	}
	if !kept && have > 0 {
		if err := t.f.Truncate(0); err != nil {
			return 0, t.diskErr(err)
		}
	}
	// The state goes first: a preallocated file without it is started over, never trusted.
	t.state = openState(t.StatePath, t.ID, t.Size, len(t.Units))
	t.state.save(t.Units)
	if t.multi() {
		if err := t.f.Truncate(t.Size); err != nil {
			return 0, t.diskErr(err)
		}
	}
	var total int64
	for _, u := range t.Units {
		total += u.done.Load()
	}
	return total, nil
}

// restore takes the units' progress from a state file that matches this transfer and whose
// every recorded byte lies within the part file. A plain file adopts the recorded layout (the
// chunk size may have changed since); frames must match.
func (t *Transfer) restore(have int64) bool {
	st, err := ReadState(t.StatePath)
	if err != nil || st.Version != stateVersion || st.ID != t.ID || st.Size != t.Size || have > t.Size || len(st.Units) == 0 {
		return false
	}
	frames := false
	for _, u := range t.Units {
		frames = frames || u.Frame
	}
	if frames && len(st.Units) != len(t.Units) {
		return false
	}
	units := make([]*Unit, len(st.Units))
	next := int64(0)
	for i, r := range st.Units {
		off, n, done := r[0], r[1], r[2]
		if off != next || n <= 0 || done < 0 || done > n || off+done > have {
			return false
		}
		if frames {
			u := t.Units[i]
			if u.Off != off || u.N != n || (done != 0 && done != n) {
				return false
			}
			units[i] = u
		} else {
			units[i] = &Unit{Off: off, N: n, SOff: off, SN: n}
		}
		units[i].done.Store(done)
		next = off + n
	}
	if next != t.Size {
		return false
	}
	t.Units = units
	return true
}

// prefix keeps a part file without usable state as a contiguous prefix, which is what a run in
// one stream leaves: always for a file of one plain unit (the digest check catches the rest);
// for several units only when it is shorter than the output, since a full-size one may be a
// preallocated file whose state was lost. Frames cannot be resumed this way.
func (t *Transfer) prefix(have int64) bool {
	if have > t.Size || (t.multi() && have >= t.Size) {
		return false
	}
	for _, u := range t.Units {
		if u.Frame {
			return false
		}
	}
	for _, u := range t.Units {
		u.done.Store(min(max(have-u.Off, 0), u.N))
	}
	return true
}

// stateFile is the open state file. It is written in place, padded with spaces to a size
// reserved when the transfer starts: saving progress never needs new disk space, so the state
// that makes a resume possible can still be written when the disk has just filled up. A torn
// write only costs the resume (the JSON no longer parses and the file is started over).
type stateFile struct {
	f    *os.File
	st   State
	size int
}

// openState opens the state file and reserves room for the largest state this transfer can
// write. Failing that (no space even now), progress is simply not recorded.
func openState(path, id string, size int64, units int) *stateFile {
	big := State{Version: stateVersion, ID: id, Size: size, Units: make([][3]int64, units)}
	for i := range big.Units {
		big.Units[i] = [3]int64{1 << 62, 1 << 62, 1 << 62}
	}
	data, err := json.Marshal(big)
	if err != nil {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil
	}
	return &stateFile{f: f, st: State{Version: stateVersion, ID: id, Size: size}, size: (len(data) + 1 + 4095) &^ 4095}
}

// save records the units' progress. Errors are ignored: the worst case is a resume from less.
// The part file is not synced first (an fsync a second stalls the writers on slow disks):
// after a process is killed the page cache still holds every byte the state claims, and after
// a machine crash that lost some, the digest check at the end fails and the download starts
// over.
func (s *stateFile) save(units []*Unit) {
	if s == nil {
		return
	}
	st := s.st
	st.Units = make([][3]int64, len(units))
	for i, u := range units {
		st.Units[i] = [3]int64{u.Off, u.N, u.done.Load()}
	}
	data, err := json.Marshal(st)
	if err != nil || len(data) > s.size {
		return
	}
	data = append(data, bytes.Repeat([]byte{' '}, s.size-len(data))...)
	s.f.WriteAt(data, 0)
}

func (s *stateFile) close() {
	if s != nil {
		s.f.Close()
	}
}

// saver records the progress every stateInterval until stop is closed.
func (t *Transfer) saver(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	if t.state == nil {
		return
	}
	tick := time.NewTicker(stateInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			t.state.save(t.Units)
		case <-stop:
			return
		}
	}
}
