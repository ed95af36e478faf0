// Package backend opens a model on the backend a program names, or picks one: [Auto] runs the
// bundle's programs on the Apple Neural Engine where the ANE is available, the bundle carries
// ANE programs, the ANE self-test has passed on this OS build and every planned program
// compiles, and on the CPU otherwise. [Open] returns the backend with the [Choice] it made and
// why, so that a program using the runtime as a library gets the same "auto" as anerun.
//
// The self-test runs once per OS build, ideally in a child process ([ChildSelfTest]): an
// Objective-C exception inside the private framework cannot be caught from Go and aborts the
// process, and a failed test must send auto to the CPU rather than end the program. Its record
// is kept in the anepack store directory ([SelfTests]); the options whose value "auto" means
// "what this machine was found to take" (the blob layout, how quantized weights reach the
// compiler) read it too.
//
// Open keeps no state between calls: what it reads is in its [Options] and in the self-test
// record on disk.
package backend
