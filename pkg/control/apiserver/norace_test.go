//go:build !race

package apiserver

// raceDetector: this test binary runs under the race detector.
const raceDetector = false
