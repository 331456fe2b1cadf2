package safeprint

import (
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of [Indent] and [AppendIndent].
const (
	// DefaultMaxDepth is how many levels of nesting are indented; deeper
	// containers are printed compactly on one line.
	DefaultMaxDepth = 64
	// DefaultMaxBytes caps the output, the marker that says what was cut
	// aside.
	DefaultMaxBytes = 16 << 20
)

// IndentOptions configures [Indent] and [AppendIndent]. A nil
// *IndentOptions means all defaults.
type IndentOptions struct {
	// MaxDepth is how many levels of nesting are indented; a container
	// nested deeper is printed compactly, as json.Compact would, so the
	// output stays valid JSON. Values below 1 mean DefaultMaxDepth.
	MaxDepth int
	// MaxBytes caps the output. Past it the output stops, at a character
	// boundary, with a line saying how many of the input's bytes were not
	// shown. Values below 1 mean DefaultMaxBytes.
	MaxBytes int
}

func (o *IndentOptions) limits() (depth, size int) {
	depth, size = DefaultMaxDepth, DefaultMaxBytes
	if o != nil && o.MaxDepth > 0 {
		depth = o.MaxDepth
	}
	if o != nil && o.MaxBytes > 0 {
		size = o.MaxBytes
	}
	return depth, size
}

// newlineSpaces is a newline and the indentation written at once; deeper
// lines take several.
var newlineSpaces = []byte("\n                                                                                                                                ")

// flushAt is the size at which [Indent] hands its buffer to the writer.
const flushAt = 4 << 10

// Indent writes src to w indented as json.Indent(dst, src, "", "  ")
// would, within the limits of opts (see [IndentOptions]). Invalid JSON
// (encoding/json's *json.SyntaxError, as json.Indent reports it) writes
// nothing. Its memory does not grow with the output: it writes through a
// 4 KiB buffer.
func Indent(w io.Writer, src []byte, opts *IndentOptions) error {
	if err := validate(src); err != nil {
		return err
	}
	return indentValid(w, src, opts)
}

// indentValid is Indent of a valid src.
func indentValid(w io.Writer, src []byte, opts *IndentOptions) error {
	p := newPrinter(make([]byte, 0, flushAt), src, opts)
	p.w = w
	p.run()
	p.flush()
	return p.err
}

// AppendIndent appends src to dst indented as [Indent] writes it. On
// invalid JSON it returns dst unchanged and the error. It measures the
// output first, so dst grows once, to the size it needs.
func AppendIndent(dst, src []byte, opts *IndentOptions) ([]byte, error) {
	if err := validate(src); err != nil {
		return dst, err
	}
	p := newPrinter(slices.Grow(dst, indentedSize(src, opts)), src, opts)
	p.written = -len(dst)
	p.run()
	return p.out, nil
}

// IndentString returns src indented as [Indent] writes it, in memory of
// the output's size.
func IndentString(src []byte, opts *IndentOptions) (string, error) {
	if err := validate(src); err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(indentedSize(src, opts))
	_ = indentValid(&b, src, opts) // a strings.Builder does not fail
	return b.String(), nil
}

// indentedSize is the length of a valid src indented.
func indentedSize(src []byte, opts *IndentOptions) int {
	var c counter
	_ = indentValid(&c, src, opts) // a counter does not fail
	return int(c)
}

type counter int

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}

// validate reports src's syntax error as encoding/json words it. json.Valid
// keeps its stack in a pooled scanner and refuses more than 10,000 levels.
func validate(src []byte) error {
	if json.Valid(src) {
		return nil
	}
	var raw json.RawMessage
	if err := json.Unmarshal(src, &raw); err != nil {
		return err
	}
	return errors.New("safeprint: invalid JSON") // unreachable: Unmarshal and Valid share a scanner
}

// printer indents a valid JSON text in one pass. Because the text is
// valid, it needs no stack: only the depth, and whether the last token
// opened a container whose first member (if any) is yet to come.
type printer struct {
	w        io.Writer // nil: out grows (AppendIndent)
	out      []byte
	src      []byte
	maxDepth int
	maxBytes int
	written  int // bytes of output handed to w, minus what dst held before
	err      error
	cut      bool
}

func newPrinter(out, src []byte, opts *IndentOptions) *printer {
	depth, size := opts.limits()
	return &printer{out: out, src: src, maxDepth: depth, maxBytes: size}
}

func (p *printer) run() {
	src := p.src
	depth := 0
	open := false // the last token was { or [, its newline not yet written
	for i := 0; i < len(src) && !p.cut && p.err == nil; {
		c := src[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		case '}', ']':
			if open {
				open = false // {} and [] stay on one line
			} else {
				if depth <= p.maxDepth {
					p.newline(depth-1, i)
				}
				depth--
			}
			p.emit(src[i:i+1], i, true)
			i++
		case ',':
			p.emit(src[i:i+1], i, true)
			if depth <= p.maxDepth {
				p.newline(depth, i+1)
			}
			i++
		case ':':
			p.emit(src[i:i+1], i, true)
			if depth <= p.maxDepth {
				p.emit(newlineSpaces[1:2], i+1, false)
			}
			i++
		default:
			if open {
				open = false
				depth++
				if depth <= p.maxDepth {
					p.newline(depth, i)
				}
			}
			end := i + 1
			switch c {
			case '{', '[':
				open = true
			case '"':
				for src[end] != '"' {
					if src[end] == '\\' {
						end++
					}
					end++
				}
				end++
			default: // a number, true, false or null
				for end < len(src) && !isDelimiter(src[end]) {
					end++
				}
			}
			p.emit(src[i:end], i, true)
			i = end
		}
		if depth == 0 && !open {
			// The top-level value ended: json.Indent copies what follows
			// (white space only, in valid JSON) as is.
			p.emit(src[i:], i, true)
			break
		}
	}
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', ']', '}', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// newline writes a newline and the indentation of depth; at is the input
// offset it stands for.
func (p *printer) newline(depth, at int) {
	n := 2 * depth
	k := min(n, len(newlineSpaces)-1)
	p.emit(newlineSpaces[:1+k], at, false)
	for n -= k; n > 0; n -= k {
		k = min(n, len(newlineSpaces)-1)
		p.emit(newlineSpaces[1:1+k], at, false)
	}
}

// emit appends b, the output for the input from offset at (b is the
// input itself when verbatim), cutting it at the size limit.
func (p *printer) emit(b []byte, at int, verbatim bool) {
	if p.cut || p.err != nil {
		return
	}
	if room := p.maxBytes - p.written - len(p.out); len(b) > room {
		k := max(room, 0)
		for k > 0 && !utf8.RuneStart(b[k]) {
			k--
		}
		p.out = append(p.out, b[:k]...)
		if verbatim {
			at += k
		}
		p.out = append(p.out, "\n[output cut at "...)
		p.out = strconv.AppendInt(p.out, int64(p.maxBytes), 10)
		p.out = append(p.out, " bytes: the last "...)
		p.out = strconv.AppendInt(p.out, int64(len(p.src)-at), 10)
		p.out = append(p.out, " of the input's "...)
		p.out = strconv.AppendInt(p.out, int64(len(p.src)), 10)
		p.out = append(p.out, " bytes are not shown]"...)
		p.cut = true
		return
	}
	if p.w == nil || len(p.out)+len(b) < flushAt {
		p.out = append(p.out, b...)
		return
	}
	// A long token goes to w as is rather than through the buffer.
	p.flush()
	if len(b) >= flushAt {
		p.write(b)
	} else {
		p.out = append(p.out, b...)
	}
}

func (p *printer) flush() {
	p.write(p.out)
	p.out = p.out[:0]
}

func (p *printer) write(b []byte) {
	if p.err != nil || len(b) == 0 {
		return
	}
	p.written += len(b)
	_, p.err = p.w.Write(b)
}
