//go:build race

package main

// raceEnabled: this test binary (and so every oz0 the tests run) has the race detector, which
// multiplies the memory a program uses (5-10x, Go says): memory bounds do not hold under it.
const raceEnabled = true
