//go:build !race

package broker

const raceDetector = false
