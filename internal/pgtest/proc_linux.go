package pgtest

import (
	"os/exec"
	"syscall"
)

// postmasterAttr makes the kernel send the postmaster SIGQUIT (immediate
// shutdown) when the test process dies.
func postmasterAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
}
