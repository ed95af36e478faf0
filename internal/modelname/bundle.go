package modelname

import (
	"fmt"

	"github.com/anepack/anepack/format"
)

// ForBundle is the name a bundle is stored under when none is given: its source repo id when
// it was packed from the Hugging Face Hub (so `anepack Org/Name` then `anerun import` gives
// the name that `anerun Org/Name` looks for), else its model name; the tag is its weight type.
func ForBundle(m *format.Manifest) (Name, error) {
	tag, err := TagOf(m.Model.DType)
	if err != nil {
		return Name{}, fmt.Errorf("the bundle's weight type: %w", err)
	}
	model := sanitize(m.Model.Name)
	if r := m.Provenance.Repo; m.Provenance.Source == "hf" && (Name{Model: r}).IsRepo() {
		model = r
	}
	return Name{Model: model, Tag: tag}, nil
}
