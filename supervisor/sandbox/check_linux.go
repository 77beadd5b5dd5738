//go:build linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// check builds a sandbox of tier t that runs nothing, and explains a failure.
func check(t Tier) error {
	err := probe(t)
	if err == nil {
		return nil
	}
	u := &Unavailable{Tier: t, Reason: err.Error(), Mend: "see how to check a machine in docs/sandbox.md, or run with --sandbox none"}
	if r := userNamespaceRefusal(); r != nil {
		u.Reason, u.Mend = r.Reason, r.Mend
	} else if inContainer() && errors.Is(err, syscall.EPERM) {
		u.Reason = "the container this runs in refuses user namespaces (" + err.Error() + ")"
		u.Mend = "run the container with --security-opt seccomp=unconfined (or a seccomp profile that allows user namespaces), or use --sandbox none"
	}
	return u
}

func probe(t Tier) error {
	dir, err := os.MkdirTemp("", "oz0-sandbox-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		return err
	}
	p, err := Prepare(&exec.Cmd{}, Config{Tier: t, Root: root})
	if err != nil {
		return err
	}
	p.cfg.Probe = true
	if t.Policy().OwnNetwork {
		p.cfg.Listen = []string{"127.0.0.1:0"}
	}
	if err := p.Start(); err != nil {
		return err
	}
	if err := p.Cmd().Wait(); err != nil {
		return err
	}
	<-p.done
	return nil
}

// userNamespaceRefusal reads the settings that refuse unprivileged user namespaces; nil when none
// does (root is not refused by them).
func userNamespaceRefusal() *Unavailable {
	if os.Geteuid() == 0 && initialUserNamespace() {
		return nil
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	switch {
	case read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
		return &Unavailable{
			Reason: "user namespaces are disabled for users (sysctl kernel.unprivileged_userns_clone = 0)",
			Mend:   "sudo sysctl -w kernel.unprivileged_userns_clone=1 (and the same line in /etc/sysctl.d/ to keep it), or run with --sandbox none",
		}
	case read("/proc/sys/user/max_user_namespaces") == "0":
		return &Unavailable{
			Reason: "user namespaces are disabled (sysctl user.max_user_namespaces = 0)",
			Mend:   "sudo sysctl -w user.max_user_namespaces=15000 (and the same line in /etc/sysctl.d/ to keep it), or run with --sandbox none",
		}
	case read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
		return &Unavailable{
			Reason: "AppArmor restricts unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns = 1, as on Ubuntu 23.10 and later)",
			Mend:   "give oz0 an AppArmor profile that allows them (docs/sandbox.md has one), or sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or run with --sandbox none",
		}
	}
	return nil
}

func inContainer() bool {
	for _, p := range []string{"/.dockerenv", "/run/.containerenv"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}
