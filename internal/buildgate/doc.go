// Package buildgate holds tests of the repository's build gates (the
// Makefile targets CI relies on); it has no code of its own.
package buildgate
