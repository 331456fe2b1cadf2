// Package jsonstr writes JSON string literals without reflection, for the
// hand-written encoders on the module's hot paths.
package jsonstr

import "unicode/utf8"

const hex = "0123456789abcdef"

// Append appends s to dst as a JSON string literal, HTML characters left
// alone: '"' and '\\' escaped, \b \f \n \r \t short, other bytes below
// 0x20 as \u00XX, invalid UTF-8 as \ufffd. With lineTerminators, U+2028
// and U+2029 are escaped too, as encoding/json does (without it, as
// JavaScript's JSON.stringify writes them: as is).
func Append(dst []byte, s string, lineTerminators bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case lineTerminators && (r == '\u2028' || r == '\u2029'):
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
