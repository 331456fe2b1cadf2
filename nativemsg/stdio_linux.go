package nativemsg

import "syscall"

// dup2 uses dup3, which every Linux architecture has (arm64 lacks dup2).
func dup2(oldfd, newfd int) error { return syscall.Dup3(oldfd, newfd, 0) }
