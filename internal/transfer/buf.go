package transfer

// bufSize is the read/write unit of a stream and of the hasher.
const bufSize = 256 << 10

// bufs is a free list of copy buffers. Unlike a sync.Pool it keeps them across garbage
// collections, so a long download allocates one buffer per concurrent stream once instead of a
// steady stream of garbage, and its memory stays flat however large the file.
var bufs = make(chan []byte, 64)

func getBuf() []byte {
	select {
	case b := <-bufs:
		return b
	default:
		return make([]byte, bufSize)
	}
}

func putBuf(b []byte) {
	select {
	case bufs <- b:
	default:
	}
}
