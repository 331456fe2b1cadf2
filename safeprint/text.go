package safeprint

import (
	"io"
	"sync"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// hidden reports whether r must be escaped: a control character (C0, DEL,
// C1) or a bidirectional embedding, override or isolate. Newline and tab
// are controls too; the caller decides whether to keep them.
func hidden(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// appendEscape appends the visible form of r.
func appendEscape(dst []byte, r rune) []byte {
	switch r {
	case '\n':
		return append(dst, `\n`...)
	case '\r':
		return append(dst, `\r`...)
	case '\t':
		return append(dst, `\t`...)
	}
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// appendInvalid appends the visible form of a byte that is not UTF-8.
func appendInvalid(dst []byte, b byte) []byte {
	return append(dst, '\\', 'x', hexDigits[b>>4], hexDigits[b&0xf])
}

// Line returns s for a single-line field (a title, a URL, a name): every
// character [Writer] escapes, and newline, carriage return and tab too, so
// that the field cannot start a line of its own or move the cursor. A
// clean s is returned as is, without allocating.
func Line(s string) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || hidden(r) {
			return string(appendVisible(make([]byte, 0, len(s)+16), []byte(s), true, true))
		}
		i += size
	}
	return s
}

// appendVisible appends p with hidden characters escaped (newline and tab
// too when line) and returns the result and nothing else when final;
// otherwise it is appendVisiblePrefix without the count.
func appendVisible(dst, p []byte, line, final bool) []byte {
	dst, _ = appendVisiblePrefix(dst, p, line, final)
	return dst
}

// appendVisiblePrefix appends the visible form of p and returns how many
// bytes of p it consumed: all of them when final, else all but an
// incomplete UTF-8 sequence at the end, which the caller keeps for its
// next bytes.
func appendVisiblePrefix(dst, p []byte, line, final bool) ([]byte, int) {
	start := 0 // p[start:i] is clean and not yet appended
	i := 0
	for i < len(p) {
		c := p[i]
		if c >= 0x20 && c < 0x7f || (!line && (c == '\n' || c == '\t')) {
			i++
			continue
		}
		if !final && !utf8.FullRune(p[i:]) {
			break
		}
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = appendInvalid(append(dst, p[start:i]...), c)
		case hidden(r):
			dst = appendEscape(append(dst, p[start:i]...), r)
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, p[start:i]...), i
}

// Writer writes text to an underlying writer with the characters
// [Package safeprint] lists made visible, newlines and tabs kept. A write
// that ends inside a UTF-8 sequence is held back until the next write
// completes it; [Writer.Flush] writes out what is held. Its methods are
// safe for concurrent use; each Write reaches the underlying writer in one
// call or not at all.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte // the first bytes of an incomplete UTF-8 sequence, < utf8.UTFMax
	scratch []byte
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// maxScratch bounds the buffer a Writer keeps between writes.
const maxScratch = 64 << 10

// Write writes p with hidden characters escaped. It returns len(p) when
// the underlying writer took everything (held bytes count as written).
func (sw *Writer) Write(p []byte) (int, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	n := len(p)
	if len(sw.pending) == 0 && clean(p) {
		return sw.w.Write(p)
	}
	out := sw.scratch[:0]
	// Complete (or give up on) a sequence the last write left open.
	for len(sw.pending) > 0 && len(p) > 0 {
		sw.pending = append(sw.pending, p[0])
		p = p[1:]
		if !utf8.FullRune(sw.pending) {
			continue
		}
		var used int
		out, used = appendVisiblePrefix(out, sw.pending, false, false)
		// appendVisiblePrefix consumed whole characters; an invalid first
		// byte leaves the rest to be read again, which may start a new
		// sequence.
		sw.pending = append(sw.pending[:0], sw.pending[used:]...)
	}
	if len(sw.pending) > 0 { // p ended still inside the sequence
		return n, sw.emit(out)
	}
	out, used := appendVisiblePrefix(out, p, false, false)
	sw.pending = append(sw.pending[:0], p[used:]...)
	return n, sw.emit(out)
}

// Flush writes out, escaped, the bytes of an incomplete UTF-8 sequence the
// last Write ended with. Call it when the stream ends.
func (sw *Writer) Flush() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if len(sw.pending) == 0 {
		return nil
	}
	out := appendVisible(sw.scratch[:0], sw.pending, false, true)
	sw.pending = sw.pending[:0]
	return sw.emit(out)
}

func (sw *Writer) emit(out []byte) error {
	if cap(out) <= maxScratch {
		sw.scratch = out[:0]
	}
	if len(out) == 0 {
		return nil
	}
	_, err := sw.w.Write(out)
	return err
}

// clean reports whether p has nothing to escape and ends on a character
// boundary.
func clean(p []byte) bool {
	for i := 0; i < len(p); {
		c := p[i]
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
			i++
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		if (r == utf8.RuneError && size == 1) || hidden(r) {
			return false
		}
		i += size
	}
	return true
}
