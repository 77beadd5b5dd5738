package main

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	// tty tries to escape through the terminal oz0 was started from: it opens /dev/tty, writes
	// to it, and pushes "touch ARG" and a newline into its input with TIOCSTI (what the shell
	// that started oz0 would then run as the user), then says how each went and answers.
	rawModes["tty"] = func(arg string) {
		readRequest()
		var said []string
		f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			said = append(said, "open /dev/tty: "+errText(err))
		} else {
			_, err = f.WriteString("\r\nHARNESS-WROTE-ON-THE-TERMINAL\r\n")
			said = append(said, "write /dev/tty: "+errText(err))
			var failed error
			for _, c := range []byte("touch " + arg + "\n") {
				if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); e != 0 {
					failed = e
					break
				}
			}
			said = append(said, "TIOCSTI: "+errText(failed))
			f.Close()
		}
		// The session's own controlling terminal, by the kernel's account (tty_nr in stat).
		stat, _ := os.ReadFile("/proc/self/stat")
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 4 {
			said = append(said, "tty_nr: "+fields[4])
		}
		text, _ := json.Marshal(strings.Join(said, "\n") + "\n")
		put(`{"type":"say","text":`+string(text)+`}`, `{"type":"result","output":"tried"}`)
	}
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return "refused (" + err.Error() + ")"
}
