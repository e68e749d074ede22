package jobmanager

import "syscall"

// applicationAttr has the kernel kill an application-mode program when
// its JobManager dies (a YARN ApplicationMaster killed with -9), so that
// the next attempt does not find it still submitting.
func applicationAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
