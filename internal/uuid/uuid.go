// Package uuid makes random (version 4) UUIDs, the ids the protocols'
// reference implementations give requests, commands and approvals.
package uuid

import (
	"crypto/rand"
	"encoding/hex"
)

// Len is the length of a UUID's text form.
const Len = 36

// Append appends a new random UUID in its 36-character text form
// (xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx) to dst.
func Append(dst []byte) []byte {
	var u [16]byte
	rand.Read(u[:]) // never fails: crypto/rand crashes the program instead
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var s [Len]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return append(dst, s[:]...)
}

// New returns a new random UUID in its text form.
func New() string { return string(Append(make([]byte, 0, Len))) }
