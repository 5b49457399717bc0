//go:build race

package broker

// raceDetector is set when the tests run with -race, whose shadow memory
// follows every allocation and is never given back: resident-memory bounds
// are checked without it (test.sh runs the TestMemory tests again so).
const raceDetector = true
