//go:build !unix

package main

import "errors"

// limitFiles is not available here: the tests that need it fail to start
// their child and say so.
func limitFiles(uint64) error { return errors.New("no file descriptor limit on this platform") }
