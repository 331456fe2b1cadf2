//go:build !linux

package hostcmd

func preparePipe(fd int) bool { return false }
