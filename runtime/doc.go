// Package runtime runs a packed model: it opens a .aneb bundle as a [Model] (the validated config
// and zero-copy views of every tensor in the memory mapping), keeps one conversation's state in a
// [Session] (the tokens whose keys and values a backend has cached), samples the next token
// ([Sampler]: greedy, temperature, top-k, top-p, min-p, repetition penalty, seeded) and drives
// generation ([Session.Generate]: streaming text, eos ids and stop strings, cancellation).
//
// Everything here is independent of where the arithmetic happens. A [Backend] computes the
// forward pass — a batch of tokens at consecutive positions in, logits out, the KV cache inside
// its [State] — and cmd/anerun chooses one: runtime/cpu today, the ANE and its simulator later.
// The backend packages import this one for [Model] and implement [Backend]; this package never
// imports a backend. (The design notes list only arch as runtime/cpu's import; importing runtime
// instead of duplicating the tensor views is what lets every backend share one loader.)
//
// Go's own runtime package is imported as goruntime where it is needed.
package runtime
