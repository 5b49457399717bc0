//go:build !unix

package log

func cpuTime() int64 { return 0 }
