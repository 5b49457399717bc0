package control

import "time"

// Routes returns the pattern of every endpoint New serves, from the table
// New registers.
func Routes() []string {
	var out []string
	for _, rt := range (&server{}).routes() {
		out = append(out, rt.pattern)
	}
	return out
}

// SetWriteStall sets how long a streamed answer waits for its client, and
// returns a function that restores it.
func SetWriteStall(d time.Duration) (restore func()) {
	old := writeStall
	writeStall = d
	return func() { writeStall = old }
}
