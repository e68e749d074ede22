package taskmanager

import (
	"syscall"
	"time"
)

// workerAttr puts a worker in a process group of its own, so that a signal
// to the group reaches the processes it starts, and has the kernel kill it
// when the TaskManager dies.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// processCPUTime is the process's user and system CPU time.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
