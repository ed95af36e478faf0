package affinity

// Cores returns how many compute threads the CPUs this process may run on are worth: one per
// physical core, not one per SMT thread (two hyperthreads share a core's vector units, and a
// second thread on each core only adds to every pooled call's synchronization), and on a hybrid
// CPU only the performance cores (a call waits for its slowest thread, and an efficiency core
// is the slowest). It is what llama.cpp and ollama default their thread count to. It returns 0
// when the system does not say, and the caller then keeps one thread per CPU.
func Cores() int { return cores() }
