//go:build unix

package doctest

import (
	"os/exec"
	"syscall"
)

// killGroupOnCancel runs cmd in a process group of its own and kills the
// whole group when its context ends: a hung block's children go too.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
