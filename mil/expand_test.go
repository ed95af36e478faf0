package mil

import (
	"strings"
	"testing"

	"github.com/anepack/anepack/dtype"
)

// TestExpandConstexpr generates the q8 and q4 kernels of a model, fills their blob records with
// random codes, scales and offsets, and runs each in the sim as written (constexpr ops) and
// expanded (dense fp16 records): the outputs must be bit-identical, and the expanded text must
// name no constexpr op and only ExpandedPath plus the files it still reads (the biases).
func TestExpandConstexpr(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.Q8, dtype.Q4} {
		_, _, ks := smallKernels(t, Options{Seqs: []int{32}, MaxLMHeadRows: 128, WeightDType: dt})
		for _, k := range ks {
			if k.Layer == 1 {
				continue
			}
			p, err := Parse([]byte(k.MIL))
			if err != nil {
				t.Fatal(err)
			}
			r := newRand(uint64(len(k.Name)))
			weights := synthWeightsWith(p, func(payload []byte, ty Type) {
				switch ty.DType {
				case FP16:
					copy(payload, f16Bytes(randF16(r, len(payload)/2, 0.05)))
				default:
					for i := range payload {
						payload[i] = byte(r.IntN(256))
					}
				}
			})
			text, w, err := ExpandConstexpr([]byte(k.MIL), weights)
			if err != nil {
				t.Fatalf("%s %s: %v", dt, k.Name, err)
			}
			if strings.Contains(string(text), "constexpr_") || w[ExpandedPath] == nil {
				t.Fatalf("%s %s: not expanded:\n%s", dt, k.Name, text)
			}
			x := randF16(r, k.Inputs[0].Shape[1]*k.Seq, 1)
			n := k.Outputs[0].Shape[1] * k.Seq
			want := evalText(t, []byte(k.MIL), weights, x, n)
			got := evalText(t, text, w, x, n)
			for i := range want {
				if want[i] != got[i] {
					t.Fatalf("%s %s: output %d is %#04x expanded, %#04x with the constexpr op", dt, k.Name, i, got[i], want[i])
				}
			}
		}
	}
	if _, _, err := ExpandConstexpr(readTestdata(t, "sim_affine_ios16.mil"), nil); err == nil || !strings.Contains(err.Error(), "ios16") {
		t.Errorf("an ios16 program: %v", err)
	}
}

// evalText compiles a program and evaluates it on x, returning its n fp16 outputs.
func evalText(t *testing.T, text []byte, weights map[string][]byte, x []uint16, n int) []uint16 {
	t.Helper()
	e := compileText(t, text, weights)
	y := make([]uint16, n)
	if err := e.Eval([][]uint16{x}, [][]uint16{y}); err != nil {
		t.Fatal(err)
	}
	return y
}
