//go:build !linux

package jobmanager

import "syscall"

// applicationAttr: only Linux kills the program with its JobManager.
func applicationAttr() *syscall.SysProcAttr { return nil }
