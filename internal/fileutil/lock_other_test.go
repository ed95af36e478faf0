//go:build !unix

package fileutil

const lockWorks = false
