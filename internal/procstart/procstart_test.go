package procstart

import (
	"runtime"
	"testing"
	"time"
)

var testLoaded = time.Now() // this test package's init, after the process started

func TestTimeIsTheProcessStart(t *testing.T) {
	got := Time()
	if got.After(testLoaded) {
		t.Fatalf("the process started at %v, after this test's package was initialised (%v)", got, testLoaded)
	}
	if runtime.GOOS == "linux" {
		if got.Equal(loaded) {
			t.Fatal("on Linux the start is the kernel's, not the package's initialisation")
		}
	}
	// A correctness bound, far from what a loaded machine takes to start a test binary.
	if testLoaded.Sub(got) > 10*time.Minute {
		t.Fatalf("the process started %v before this test's init", testLoaded.Sub(got))
	}
}
