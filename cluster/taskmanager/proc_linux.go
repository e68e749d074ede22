package taskmanager

import "syscall"

// workerAttr puts a worker in a process group of its own, so that a signal
// to the group reaches the processes it starts, and has the kernel kill it
// when the TaskManager dies.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
