//go:build race

package engine

// raceEnabled is set in race-detector builds, whose shadow memory
// multiplies a process's RSS: the memory-bound tests do not hold there.
const raceEnabled = true
