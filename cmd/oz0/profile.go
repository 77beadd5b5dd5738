package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// ProfileEnv names a path prefix: when it is set, each oz0 process writes a CPU profile of its
// whole run to PREFIX.COMMAND.PID (the benchmarks set it with OZ0_BENCH_PROFILE, to see where the
// time of a real `oz0 dev` and `oz0 run` goes; docs/development.md).
const ProfileEnv = "OZ0_CPUPROFILE"

// startProfile starts the CPU profile ProfileEnv asks for; the function it returns stops it.
func startProfile(args []string) func() {
	prefix := os.Getenv(ProfileEnv)
	if prefix == "" || len(args) == 0 {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%s.%d", prefix, args[0], os.Getpid()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "oz0: %s: %v\n", ProfileEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		fmt.Fprintf(os.Stderr, "oz0: %s: %v\n", ProfileEnv, err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
