package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/orchestrator-zero/oz0/internal/buildinfo"
)

// machineKey is what a probe's verdict depends on: this boot (the kernel and how it was set up),
// the settings that refuse user namespaces, the user, and the oz0 binary the sandbox's init runs
// (a new build checks again). false when one of them cannot be read: nothing is remembered.
func machineKey(Tier) (string, bool) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", false
	}
	exe, ok := buildinfo.ExecutableKey()
	if !ok {
		return "", false
	}
	h := sha256.New()
	fmt.Fprintf(h, "boot %s\nuid %d %d\ninitial-userns %t\n%s\n", boot, os.Getuid(), os.Geteuid(), initialUserNamespace(), exe)
	for _, p := range []string{"/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces",
		"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "/proc/sys/user/max_mnt_namespaces", "/proc/sys/user/max_pid_namespaces",
		"/proc/sys/user/max_net_namespaces"} {
		b, _ := os.ReadFile(p) // absent where the kernel has no such setting
		fmt.Fprintf(h, "%s %s\n", p, b)
	}
	return hex.EncodeToString(h.Sum(nil)), true
}
