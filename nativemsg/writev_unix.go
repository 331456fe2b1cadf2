//go:build unix

package nativemsg

import (
	"os"
	"syscall"
	"unsafe"
)

// maxIovecs bounds the parts given to one writev (IOV_MAX is 1024).
const maxIovecs = 1024

// fileVectors writes batches of parts to an *os.File with writev, which
// the os package does not offer (net.Buffers uses it only for network
// connections): a frame written from several parts then costs one system
// call, not one per part. It is used under the Writer's lock.
type fileVectors struct {
	rc    syscall.RawConn
	vecs  []syscall.Iovec // the batch's vectors, reused
	iov   []syscall.Iovec // what is left to write: a tail of vecs
	err   error
	write func(fd uintptr) bool // writeFD, bound once
}

func newFileVectors(w any) *fileVectors {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	v := &fileVectors{rc: rc}
	v.write = v.writeFD
	return v
}

func (v *fileVectors) writeParts(parts [][]byte) error {
	for _, p := range parts {
		if len(p) > 0 {
			iov := syscall.Iovec{Base: &p[0]}
			iov.SetLen(len(p))
			v.vecs = append(v.vecs, iov)
		}
	}
	v.iov, v.err = v.vecs, nil
	err := v.rc.Write(v.write)
	clear(v.vecs) // drop references to the parts
	v.vecs, v.iov = v.vecs[:0], nil
	if err != nil {
		return err
	}
	return v.err
}

// writeFD writes what is left of v.iov to fd; it returns false to wait
// until fd takes more (a non-blocking pipe that is full).
func (v *fileVectors) writeFD(fd uintptr) bool {
	for len(v.iov) > 0 {
		n, _, errno := syscall.Syscall(syscall.SYS_WRITEV, fd,
			uintptr(unsafe.Pointer(&v.iov[0])), uintptr(min(len(v.iov), maxIovecs)))
		switch errno {
		case 0:
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		default:
			v.err = errno
			return true
		}
		if n == 0 {
			v.err = syscall.EIO // no progress
			return true
		}
		v.consume(int(n))
	}
	return true
}

// consume drops the first n bytes written from v.iov.
func (v *fileVectors) consume(n int) {
	for n > 0 {
		l := int(v.iov[0].Len)
		if n < l {
			v.iov[0].Base = (*byte)(unsafe.Add(unsafe.Pointer(v.iov[0].Base), n))
			v.iov[0].SetLen(l - n)
			return
		}
		n -= l
		v.iov = v.iov[1:]
	}
}
