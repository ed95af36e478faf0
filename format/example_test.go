package format_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/anepack/anepack/format"
)

// Write a bundle with two sections, then open it and read a section in place.
func Example() {
	dir, err := os.MkdirTemp("", "aneb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.aneb")

	w, err := format.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Abort() // removes the temporary file on any early return; a no-op after Commit
	stop := format.AbortOnSignal(w)
	defer stop()
	if _, err := w.Add(format.KindMIL, "mil/hello", []byte("program(1.0)\n")); err != nil {
		log.Fatal(err)
	}
	sw, err := w.Begin(format.KindTensors, "tensors") // stream large data
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		sw.Write(make([]byte, 10000))
	}
	if _, err := w.End(); err != nil {
		log.Fatal(err)
	}
	if _, err := w.Commit(&format.Manifest{Producer: "example"}); err != nil {
		log.Fatal(err)
	}

	b, err := format.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	for _, s := range b.Sections() {
		fmt.Printf("%-9s %-9s offset %5d length %5d\n", s.Name, s.Kind, s.Offset, s.Length)
	}
	s, _ := b.Section("mil/hello")
	text, _ := b.Bytes(s) // a slice of the read-only mapping
	fmt.Printf("%q, version %s, verify: %v\n", text, b.Header().Version(), b.Verify(nil))
	// Output:
	// mil/hello mil       offset 16384 length    13
	// tensors   tensors   offset 32768 length 30000
	// "program(1.0)\n", version 1.3, verify: <nil>
}
