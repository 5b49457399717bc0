//go:build !unix

package main

import (
	"errors"
	"os"
)

// limitFiles is not available here: the tests that need it fail to start
// their child and say so.
func limitFiles(uint64) error { return errors.New("no file descriptor limit on this platform") }

// maxRSS is not measured here.
func maxRSS(*os.ProcessState) (int64, bool) { return 0, false }
