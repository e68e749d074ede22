//go:build !linux

package taskmanager

import (
	"syscall"
	"time"
)

// workerAttr puts a worker in a process group of its own, so that a signal
// to the group reaches the processes it starts. Only Linux also kills
// workers when the TaskManager dies.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// processCPUTime is unknown off Linux.
func processCPUTime() time.Duration { return -1 }
