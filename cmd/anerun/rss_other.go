//go:build !linux && !darwin

package main

// peakRSS is not measured on this system; bench reports 0.
func peakRSS() int64 { return 0 }
