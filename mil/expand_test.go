package mil

import (
	"strings"
	"testing"
)

// TestExpandConstexpr refuses programs of the older syntax; package milgen checks that its
// quantized programs expand without changing a bit.
func TestExpandConstexpr(t *testing.T) {
	if _, _, err := ExpandConstexpr(readTestdata(t, "sim_affine_ios16.mil"), nil); err == nil || !strings.Contains(err.Error(), "ios16") {
		t.Errorf("an ios16 program: %v", err)
	}
}
