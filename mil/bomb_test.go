package mil

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// bombText is a ~1.5 KB program with [1, 64, 1, 32] I/O whose broadcast add builds an
// intermediate of 2048·2048·256 = 2^30 elements: 4 GiB of float32 in the sim. Every dimension
// is within the ANE's 65536, so only a bound on what the I/O implies stops it.
const bombText = `program(1.3)
{
    func main<ios18>(tensor<fp16, [1, 64, 1, 32]> x) {
        tensor<int32, [4]> sa = const()[name = string("sa"), val = tensor<int32, [4]>([1, 1, 2048, 1])];
        tensor<int32, [4]> sb = const()[name = string("sb"), val = tensor<int32, [4]>([1, 1, 1, 2048])];
        tensor<fp16, [1, 1, 2048, 1]> a = reshape(shape = sa, x = x)[name = string("a")];
        tensor<fp16, [1, 1, 1, 2048]> b = reshape(shape = sb, x = x)[name = string("b")];
        tensor<fp16, [1, 1, 2048, 2048]> c = add(x = a, y = b)[name = string("c")];
        tensor<int32, [4]> sd = const()[name = string("sd"), val = tensor<int32, [4]>([1, 2048, 2048, 1])];
        tensor<fp16, [1, 2048, 2048, 1]> d = reshape(shape = sd, x = c)[name = string("d")];
        tensor<int32, [4]> se = const()[name = string("se"), val = tensor<int32, [4]>([1, 1, 1, 256])];
        tensor<int32, [4]> be = const()[name = string("be"), val = tensor<int32, [4]>([0, 0, 0, 0])];
        tensor<fp16, [1, 1, 1, 256]> e = slice_by_size(begin = be, size = se, x = b)[name = string("e")];
        tensor<fp16, [1, 2048, 2048, 256]> g = add(x = d, y = e)[name = string("g")];
        tensor<int32, [2]> ax = const()[name = string("ax"), val = tensor<int32, [2]>([2, 3])];
        bool kd = const()[name = string("kd"), val = bool(true)];
        tensor<fp16, [1, 2048, 1, 1]> h = reduce_sum(axes = ax, keep_dims = kd, x = g)[name = string("h")];
        tensor<int32, [4]> sy = const()[name = string("sy"), val = tensor<int32, [4]>([1, 64, 1, 32])];
        tensor<fp16, [1, 64, 1, 32]> y = reshape(shape = sy, x = h)[name = string("y")];
    } -> (y);
}
`

// TestMILBomb compiles a small program that asks for a 2^30-element intermediate: Compile must
// refuse it before allocating it (it used to take 4.4 GB and 22 s), naming the first tensor
// that outgrows the I/O (c, 2048 times the I/O's 2048 elements).
func TestMILBomb(t *testing.T) {
	p, err := Parse([]byte(bombText))
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err = p.Compile(nil)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a program with a 2^30-element intermediate compiled")
	}
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "add c:") || !strings.Contains(err.Error(), "64 times") {
		t.Errorf("error %q; want ErrUnsupported naming c and the bound", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("Compile allocated %d bytes before refusing", alloc)
	}
	if took > 10*time.Second { // microseconds when idle; generous for a loaded machine
		t.Errorf("Compile took %v before refusing", took)
	}
}

// TestBounds checks the other bounds: a run-time tensor with a dimension over the ANE's 65536
// is refused as something the ANE rejects, and a program whose buffers exceed the byte budget
// is refused before they are allocated, while the same program compiles within it.
func TestBounds(t *testing.T) {
	wide := refuseHeader + "tensor<fp16, [1, 64, 1, 32]> x) {\n" +
		"        tensor<int32, [4]> s = const()[name = string(\"s\"), val = tensor<int32, [4]>([1, 1, 1, 2048])];\n" +
		"        tensor<fp16, [1, 1, 1, 2048]> a = reshape(shape = s, x = x)[name = string(\"a\")];\n" +
		"        tensor<fp16, [1, 1, 1, 69632]> w = concat(axis = int32(3), interleave = bool(false), values = (a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a))[name = string(\"w\")];\n" +
		"        tensor<fp16, [1, 64, 1, 32]> y = identity(x = x)[name = string(\"y\")];\n    } -> (y);\n}\n"
	p, err := Parse([]byte(wide))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Compile(nil); !errors.Is(err, ErrANE) || !strings.Contains(err.Error(), "69632, more than the ANE's largest dimension 65536") {
		t.Errorf("69632-wide intermediate: %v", err)
	}

	base := readTestdata(t, "gen_mlp_s32.mil")
	p, err = Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	w := synthWeights(p)
	if _, err := p.CompileWith(w, CompileOptions{}); err != nil {
		t.Fatalf("default budget: %v", err)
	}
	if _, err := p.CompileWith(w, CompileOptions{MaxBytes: 64 << 10}); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "budget of 64.0 KiB") {
		t.Errorf("64 KiB budget: %v", err)
	}
}
