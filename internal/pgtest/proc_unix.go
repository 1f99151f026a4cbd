//go:build unix

package pgtest

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

func isRoot() bool { return os.Geteuid() == 0 }

// runAs runs cmd as a (without root's supplementary groups).
func runAs(cmd *exec.Cmd, a *account) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(a.uid), Gid: uint32(a.gid), Groups: []uint32{}}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
