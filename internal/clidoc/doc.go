// Package clidoc checks the command-line help of a cobra command tree: Lint finds the flag
// usages that --help would render wrongly, so that the commands' tests can refuse them.
package clidoc
