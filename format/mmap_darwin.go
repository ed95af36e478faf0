package format

// adviseMapping has nothing to ask for on macOS: it has no transparent huge pages for file
// mappings (see mmap_linux.go).
func adviseMapping(data []byte) {}
