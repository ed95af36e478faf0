package testmodel

import (
	"fmt"
	"os"

	"github.com/anepack/anepack/format"
)

// Regroup copies the q4 bundle at src to dst with every q4 tensor claiming groups of group
// inputs, and scales and offsets of the sizes that group implies (zeros, in sections of their
// own): a hostile bundle whose sizes are all consistent, so that only the group size itself is
// wrong. group must divide the columns of every q4 tensor.
func Regroup(src, dst string, group int) error {
	add := map[string][]byte{}
	var bad error
	edit := func(m *format.Manifest) {
		m.Model.GroupSize = group
		for ti := range m.Tensors {
			t := &m.Tensors[ti]
			if t.DType != "q4" {
				continue
			}
			cols := 1
			for _, d := range t.Shape[1:] {
				cols *= d
			}
			if cols%group != 0 {
				bad = fmt.Errorf("testmodel.Regroup: group %d does not divide the %d columns of %s", group, cols, t.Name)
				return
			}
			t.GroupSize = group
			for i, p := range t.Parts {
				size := int64(p.Rows) * int64(cols/group) * 2
				for _, side := range []struct {
					parts []format.TensorPart
					kind  string
				}{{t.Scales, "scales"}, {t.Offsets, "offsets"}} {
					name := fmt.Sprintf("tensors/regroup/%d/%s/%d", ti, side.kind, i)
					add[name] = make([]byte, size)
					side.parts[i] = format.TensorPart{Section: name, Rows: p.Rows, Size: size}
				}
			}
		}
	}
	// RewriteAdding calls edit before it writes the sections, so add is filled by then.
	if err := RewriteAdding(src, dst, add, edit); err != nil {
		return err
	}
	if bad != nil {
		os.Remove(dst)
		return bad
	}
	return nil
}
